package redact_test

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/heed-go/heed/internal/redact"
)

// Secrets in a URL's user info, query and credential-like path segments,
// and its whole fragment, are replaced before it is printed, logged or
// stored.
func ExampleURL() {
	u, _ := url.Parse("https://bot:hunter2@hooks.example/services/T000/B000/hB7x2Kq9Lm4Tz8Pw3Rv6?channel=ops&access_token=abc#id_token=xyz")
	fmt.Println(redact.URL(u))
	// Output: https://REDACTED@hooks.example/services/T000/B000/REDACTED?channel=ops&access_token=REDACTED#REDACTED
}

// Cut bounds text (here a 10 MB error to 80 bytes) and says how much it
// left out.
func ExampleCut() {
	huge := "handler failed: " + strings.Repeat("x", 10_000_000)
	fmt.Println(redact.Cut(huge, 80))
	// Output: handler failed: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ... [10.0 MB cut]
}

// Text finds secrets by their structure: the value of a secret key in any
// of the forms logs and errors write, whatever its length, and the
// credential after Bearer.
func ExampleText() {
	fmt.Println(redact.Text(`login failed: token=abc123 pwd=hunter2 user=bob`))
	fmt.Println(redact.Text(`request: {"password": "hunter2", "n": 1} Authorization: Bearer abc.def`))
	fmt.Println(redact.Text("exit code: 1"))
	// Output:
	// login failed: token=REDACTED pwd=REDACTED user=bob
	// request: {"password": "REDACTED", "n": 1} Authorization: REDACTED
	// exit code: 1
}
