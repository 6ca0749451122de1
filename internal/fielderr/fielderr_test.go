package fielderr

import (
	"errors"
	"fmt"
	"testing"
)

func TestError(t *testing.T) {
	errInvalid := errors.New("pkg: invalid")
	err := fmt.Errorf("wrapped: %w", New("pkg", errInvalid, "Base", "is %v, must not be negative", -1))
	if got, want := err.Error(), "wrapped: pkg: Base is -1, must not be negative"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if !errors.Is(err, errInvalid) || errors.Is(err, errors.New("pkg: invalid")) {
		t.Error("the error must match its sentinel and nothing else")
	}
	fe, ok := As(err)
	if !ok || fe.Field != "Base" || fe.Reason != "is -1, must not be negative" {
		t.Errorf("As = %+v, %v", fe, ok)
	}
	if _, ok := As(errInvalid); ok {
		t.Error("As found a field in a plain error")
	}
}
