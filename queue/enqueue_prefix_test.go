package queue_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/heed-go/heed/queue"
)

// An item's error says "queue:" once.
func TestItemErrorPrefixOnce(t *testing.T) {
	err := &queue.ItemError{Index: 1, Err: &queue.InputError{Field: "kind", Reason: "is empty"}}
	if got := err.Error(); got != "queue: item 1: kind is empty" || strings.Count(got, "queue:") != 1 {
		t.Errorf("ItemError: %q", got)
	}
	if !errors.Is(err, queue.ErrInvalid) {
		t.Error("ItemError does not match ErrInvalid")
	}
}
