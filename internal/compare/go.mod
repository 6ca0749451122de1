module github.com/heed-go/heed/internal/compare

go 1.26.0

replace github.com/heed-go/heed => ../..

require (
	github.com/cenkalti/backoff/v5 v5.0.3
	github.com/heed-go/heed v0.0.0-00010101000000-000000000000
	github.com/sony/gobreaker/v2 v2.4.0
)
