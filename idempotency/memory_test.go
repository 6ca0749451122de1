package idempotency_test

import (
	"testing"

	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/heed-go/heed/idempotency/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) keystore.Store {
		return idempotency.NewMemoryStore()
	})
}
