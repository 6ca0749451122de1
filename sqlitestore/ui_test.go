package sqlitestore_test

import (
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/queue/storetest"
)

func TestInspector(t *testing.T) {
	storetest.RunInspector(t, func(t *testing.T) jobstore.Store { return open(t) })
}
