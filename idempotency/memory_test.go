package idempotency_test

import (
	"testing"

	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/idempotency/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) idempotency.Store {
		return idempotency.NewMemoryStore()
	})
}

func TestMemoryStoreZeroValue(t *testing.T) {
	storetest.Run(t, func(t *testing.T) idempotency.Store {
		return new(idempotency.MemoryStore)
	})
}
