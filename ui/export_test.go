package ui

// groupID, for the external tests.
var GroupID = groupID
