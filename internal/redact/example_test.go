package redact_test

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/heed-go/heed/internal/redact"
)

// Secrets in a URL's user info, query, fragment and credential-like path
// segments are replaced before it is printed, logged or stored.
func ExampleURL() {
	u, _ := url.Parse("https://bot:hunter2@hooks.example/services/T000/B000/hB7x2Kq9Lm4Tz8Pw3Rv6?channel=ops&access_token=abc#id_token=xyz")
	fmt.Println(redact.URL(u))
	// Output: https://REDACTED@hooks.example/services/T000/B000/REDACTED?channel=ops&access_token=REDACTED#id_token=REDACTED
}

// Cut bounds text (here a 10 MB error to 80 bytes) and says how much it
// left out.
func ExampleCut() {
	huge := "handler failed: " + strings.Repeat("x", 10_000_000)
	fmt.Println(redact.Cut(huge, 80))
	// Output: handler failed: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ... [10.0 MB cut]
}
