package pgstoretest

import (
	"testing"

	"github.com/heed-go/heed/pgstore/internal/pgtest"
)

func TestSchemaSkips(t *testing.T) {
	t.Setenv(pgtest.EnvURL, "")
	var skipped bool
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Schema(t)
	})
	if !skipped {
		t.Error("Schema did not skip without " + pgtest.EnvURL)
	}
}
