// Package corecheck holds the test of heed's layering (imports_test.go):
// which of heed's packages, and which modules outside the standard
// library, each package may import. It has no code of its own.
package corecheck
