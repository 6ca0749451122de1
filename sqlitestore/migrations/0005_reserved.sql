-- Reserved: version 5 belongs to another branch (issue 18) and replaces
-- this file when the branches merge. It changes nothing.
SELECT 1;
