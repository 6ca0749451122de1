package redact

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

const canary = "CANARYx7Qp2Lm9Zr4Tv8Wb3N"

func TestSecretName(t *testing.T) {
	for _, n := range []string{"token", "access_token", "id_token", "refresh_token", "api_key", "apikey", "key",
		"secret", "client_secret", "password", "pass", "pwd", "jwt", "bearer", "auth", "authorization",
		"signature", "sig", "session", "X-Amz-Signature", "oauth_token", "githubToken", "client-secret",
		"X-API-KEY", "sessionid", "passwd", "AWSAccessKey", "monkey", "Set-Cookie", "sid", "db.password", "private",
		"pin", "PIN", "card_pin", "otp", "totp", "passcode", "private_key", "client_secret", "refresh_token", "access_key", "aws_secret_access_key",
		"tokens", "api_keys", "Secrets", "passwords"} {
		if !SecretName(n) {
			t.Errorf("SecretName(%q) = false", n)
		}
	}
	for _, n := range []string{"", "page", "q", "limit", "id", "user", "sort", "keyword", "codec", "passage", "code", "status_code", "keys", "pins"} {
		if SecretName(n) {
			t.Errorf("SecretName(%q) = true", n)
		}
	}
}

func TestCredential(t *testing.T) {
	for _, s := range []string{
		canary,
		"B07ABCDE1F2gh3IJ4kl5MN6o", // Slack-like
		"123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", // Telegram bot
		"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",         // JWT header
		"3f2b8c9d0e1a4b5c6d7e8f90a1b2c3d4",             // hex
	} {
		if !Credential(s) {
			t.Errorf("Credential(%q) = false", s)
		}
	}
	for _, s := range []string{
		"", "short1A", "how-to-retry-requests-in-go", "CreateOrderRequest", "IncomingWebhook",
		"2026-12-01T21-30-00", "12345678901234567890", "order-12345678901234", "XXXXXXXXXXXXXXXXXXXXXXXX",
		"has space 1a2b3c4d5e6f7g", "v1.2.3-release-candidate",
		"550e8400-e29b-41d4-a716-446655440000", // UUIDs are kept, see the doc

	} {
		if Credential(s) {
			t.Errorf("Credential(%q) = true", s)
		}
	}
}

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://example.com/items?page=2", "https://example.com/items?page=2"},
		{"https://u:pw@example.com/", "https://REDACTED@example.com/"},
		{"https://tok@example.com/", "https://REDACTED@example.com/"},
		{"https://h/p?access_token=abc&page=2&X-Amz-Signature=ff", "https://h/p?access_token=REDACTED&page=2&X-Amz-Signature=REDACTED"},
		{"https://h/p?jwt=a&bearer=b&pass=c&key=d&sig=e;code=f", "https://h/p?jwt=REDACTED&bearer=REDACTED&pass=REDACTED&key=REDACTED&sig=REDACTED;code=REDACTED"},
		{"https://h/cb#access_token=abc&token_type=bearer&state=xyz", "https://h/cb#REDACTED"},
		{"https://h/doc#section-2", "https://h/doc#REDACTED"},
		{"https://h/cb?code=abc&page=2", "https://h/cb?code=REDACTED&page=2"},
		{"https://h/hooks/T0KEN/x", "https://h/hooks/REDACTED/x"},
		{"https://h/api/token/new", "https://h/api/token/new"},
		{"https://h/cb#" + canary, "https://h/cb#REDACTED"},
		{"https://hooks.example.com/services/T000/B000/" + canary, "https://hooks.example.com/services/T000/B000/REDACTED"},
		{"https://api.example.com/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe", "https://api.example.com/REDACTED/getMe"},
		{"https://h/p?q=%22x%22&token=%22" + canary + "%22", "https://h/p?q=%22x%22&token=REDACTED"},
		{"https://h/p?u=" + canary, "https://h/p?u=REDACTED"},
		{"https://h/a%2Fb/c", "https://h/a%2Fb/c"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := URL(u); got != tt.want {
			t.Errorf("URL(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	if URL(nil) != "" {
		t.Error("URL(nil) is not empty")
	}
}

func TestErrorText(t *testing.T) {
	raw := `http://u:` + canary + `@host/p?access_token=` + canary + `&q="x"`
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	// As net/http quotes it: password masked, then %q.
	masked := strings.Replace(u.String(), u.User.String()+"@", "u:***@", 1)
	for _, msg := range []string{
		`Get "` + quoted(masked) + `": dial tcp: connection refused`,
		`Get "` + quoted(u.String()) + `": EOF`,
		`Get ` + u.String() + `: EOF`,
		"proxy said: " + canary,
	} {
		got := ErrorText(msg, u)
		if strings.Contains(got, canary) {
			t.Errorf("ErrorText(%q) = %q: canary kept", msg, got)
		}
	}
	if got := ErrorText("dial tcp 10.0.0.1:80: connection refused", u); got != "dial tcp 10.0.0.1:80: connection refused" {
		t.Errorf("innocent text changed: %q", got)
	}
}

func TestText(t *testing.T) {
	for _, s := range []string{
		`parse "http://u:` + canary + `@h/p?api_key=x\"y": invalid`,
		"GET https://h/p?token=" + canary + " failed",
		"the key is " + canary + ".",
		"password=" + canary,
		`"https://u:pw@[::1` + canary + `"`,
	} {
		if got := Text(s); strings.Contains(got, canary) {
			t.Errorf("Text(%q) = %q: canary kept", s, got)
		}
	}
	for _, s := range []string{"connection refused", "job 42 failed: boom", "http GET https://example.com/items?page=2: 503 Service Unavailable"} {
		if got := Text(s); got != s {
			t.Errorf("Text(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestDSN(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://heed:" + canary + "@db:5432/heed?sslmode=disable", "postgres://REDACTED@db:5432/heed?sslmode=disable"},
		{"postgres://db/heed?password=" + canary, "postgres://db/heed?password=REDACTED"},
		{"host=db user=heed password=" + canary + " dbname=heed", "host=db user=heed password=REDACTED dbname=heed"},
		{"host=db password='" + canary + " \\' x' dbname=heed", "host=db password=REDACTED dbname=heed"},
		{"heed.db", "heed.db"},
		{"file:heed.db?cache=private", "file:heed.db?cache=private"},
	}
	for _, tt := range tests {
		if got := DSN(tt.in); got != tt.want {
			t.Errorf("DSN(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestHeader(t *testing.T) {
	for _, n := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "Idempotency-Key", "X-Auth-Token"} {
		if got := Header(n, canary); strings.Contains(got, canary) {
			t.Errorf("Header(%q) = %q", n, got)
		}
	}
	if got := Header("Accept", "application/json"); got != "Accept: application/json" {
		t.Errorf("Header(Accept) = %q", got)
	}
}

func TestCut(t *testing.T) {
	if got := Cut("short", 100); got != "short" {
		t.Errorf("Cut kept %q", got)
	}
	s := strings.Repeat("é", 5<<20) // 10 MB
	got := Cut(s, 8<<10)
	if len(got) > 8<<10 || !strings.HasSuffix(got, " MB cut]") {
		t.Fatalf("Cut: len %d, ends %q", len(got), got[len(got)-30:])
	}
	if !strings.Contains(got, " ... [10.5 MB cut]") {
		t.Errorf("Cut: mark %q", got[len(got)-30:])
	}
	for _, max := range []int{64, 100, 1000, 1024} {
		for _, n := range []int{max + 1, max + 5, 10 * max, 100000} {
			got := Cut(strings.Repeat("ab", n), max)
			if len(got) > max {
				t.Errorf("Cut(%d bytes, %d) is %d bytes", 2*n, max, len(got))
			}
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int]string{0: "0 B", 999: "999 B", 1000: "1.0 KB", 9_900_000: "9.9 MB", 1_200_000_000: "1.2 GB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzURL(f *testing.F) {
	f.Add("https://u:p@h/p?token=" + canary + "#x")
	f.Add("http://h/" + canary)
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			_ = Text(s)
			return
		}
		out := URL(u)
		if pw, ok := u.User.Password(); ok && len(pw) >= 4 && strings.Contains(out, pw) && !strings.Contains(Mark, pw) {
			// The password may appear elsewhere in the URL by chance.
			if !strings.Contains(strings.Replace(s, u.User.String()+"@", "", 1), pw) {
				t.Errorf("URL(%q) = %q keeps the password", s, out)
			}
		}
		_ = ErrorText(s, u)
	})
}

func TestJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"url": "https://example.com/", "method": "GET"}`, `{"url": "https://example.com/", "method": "GET"}`},
		{`{"url":"http://u:` + canary + `@h/?api_key=` + canary + `","n":1}`, `{"url":"http://REDACTED@h/?api_key=REDACTED","n":1}`},
		{`{"password":"hunter2","nested":{"token":{"a":[1,2]},"ok":[true,null,"x"]},"pin":1234}`,
			`{"password":"REDACTED","nested":{"token":"REDACTED","ok":[true,null,"x"]},"pin":"REDACTED"}`},
		{`["a","` + canary + `"]`, `["a","REDACTED"]`},
		{`{"html":"<b>&</b>","secret":1}`, `{"html":"<b>&</b>","secret":"REDACTED"}`},
		{`{"a":`, `"{\"a\":"`},
		// An http job's headers: secret headers by the header rule.
		{`{"headers":{"Content-Type":"application/json","Cookie":"s=1","Idempotency-Key":"\"k\"","X-Api-Key":"k1"}}`,
			`{"headers":{"Content-Type":"application/json","Cookie":"REDACTED","Idempotency-Key":"REDACTED","X-Api-Key":"REDACTED"}}`},
		{`{"other":{"Cookie":"s=1"}}`, `{"other":{"Cookie":"REDACTED"}}`}, // cookie is a secret key anywhere
	}
	for _, tt := range tests {
		if got := string(JSON([]byte(tt.in))); got != tt.want {
			t.Errorf("JSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestHost(t *testing.T) {
	for in, want := range map[string]string{
		"api.example.com":                  "api.example.com",
		"orders.svc.cluster.local:8080":    "orders.svc.cluster.local:8080",
		canary + ".hooks.example.com":      "REDACTED.hooks.example.com",
		"10.0.0.1":                         "10.0.0.1",
		"my-long-service-name.example.com": "my-long-service-name.example.com",
	} {
		if got := Host(in); got != want {
			t.Errorf("Host(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTextEscaped: a secret hidden by URL escaping (a URL inside a query
// value, an escaped query in a log) is found, at one level of escaping or
// two, in text and in URLs.
func TestTextEscaped(t *testing.T) {
	for _, in := range []string{
		"redirect_uri=https%3A%2F%2Fh.example%2Fcb%3Ftoken%3Dhunter2",
		"login failed for token%3Dhunter2",
		"https://h.example/login?next=%2Fcb%3Faccess_token%3Dhunter2&x=1",
		"https://h.example/?u=https%3A%2F%2Fbob%3Ahunter2%40db.example",
		"https://h.example/?u=https%253A%252F%252Fh%252Fcb%253Fpwd%253Dhunter2",
		"Get \"https://h.example/?cb=https%3A%2F%2Fh%2Fx%23access_token%3Dhunter2\": EOF",
	} {
		out := Text(in)
		if strings.Contains(out, "hunter2") {
			t.Errorf("Text(%q) = %q", in, out)
		}
		if again := Text(out); again != out {
			t.Errorf("Text(%q) = %q, but Text of that is %q", in, out, again)
		}
		if u, err := url.Parse(strings.TrimPrefix(strings.TrimSuffix(in, `": EOF`), `Get "`)); err == nil && u.Scheme != "" {
			if out := URL(u); strings.Contains(out, "hunter2") {
				t.Errorf("URL(%q) = %q", in, out)
			}
		}
	}
	// Escapes without a secret are kept as they are.
	for _, in := range []string{"https://h.example/search?q=a%20b%3Dc", "50%25 done", "path%2Fto%2Ffile"} {
		if out := Text(in); out != in {
			t.Errorf("Text(%q) = %q, want it kept", in, out)
		}
	}
}

// TestWebhookPaths: the credential of a webhook URL is hidden however it
// looks, and the IDs around it are kept.
func TestWebhookPaths(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX": "https://hooks.slack.com/services/T00000000/B00000000/REDACTED",
		"https://discord.com/api/webhooks/123456789012345678/hunter2":                   "https://discord.com/api/webhooks/REDACTED/REDACTED",
		"https://example.com/hooks/catch/123/abc/":                                      "https://example.com/hooks/catch/123/abc/",
		"https://example.com/api/services/Foo/bar":                                      "https://example.com/api/services/Foo/bar",
	} {
		u, _ := url.Parse(in)
		if got := URL(u); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
		if got := Text("POST " + in + ": 500"); got != "POST "+want+": 500" {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestChallenge: a WWW-Authenticate challenge keeps its parameters but
// the secret ones.
func TestChallenge(t *testing.T) {
	in := `WWW-Authenticate: Bearer realm="api", error="invalid_token", token="hunter2"`
	want := `WWW-Authenticate: Bearer realm="api", error="invalid_token", token="REDACTED"`
	if got := Text(in); got != want {
		t.Errorf("Text(%q) = %q, want %q", in, got, want)
	}
}

// TestTextControls: text from outside cannot drive the terminal it is
// printed on: escape sequences, a lone carriage return, C1 controls and
// bidirectional overrides come out as escapes; tabs, newlines and CRLF
// stay.
func TestTextControls(t *testing.T) {
	for in, want := range map[string]string{
		"boom \x1b]0;pwned\x07 \x1b[2J\x1b[31mRED": `boom \x1b]0;pwned\x07 \x1b[2J\x1b[31mRED`,
		"ok\rFAILED":                        `ok\x0dFAILED`,
		"a\u202eevil\u2066x":                `a\u202eevil\u2066x`,
		"c1 \u009b31m":                      `c1 \u009b31m`,
		"del\x7f":                           `del\x7f`,
		"line 1\r\nline 2\n\tat main.go:12": "line 1\r\nline 2\n\tat main.go:12",
		"\x1b[1mtoken=hunter2\x1b[0m":       `\x1b[1mtoken=REDACTED[0m`,
		"naïve café — ok":                   "naïve café — ok",
	} {
		got := Text(in)
		if got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		if Text(got) != got {
			t.Errorf("Text(%q) = %q, but Text of that is %q", in, got, Text(got))
		}
	}
}

// TestTextPhrases: a secret given in prose is found when its key is
// followed by is, was, are or were (or : or =) and a value that is not
// ordinary English; a sentence about a secret that gives none is kept.
func TestTextPhrases(t *testing.T) {
	for in, want := range map[string]string{
		"password is hunter2":                       "password is REDACTED",
		"login failed: the token was abc123.":       "login failed: the token was REDACTED.",
		"the secret: x":                             "the secret: REDACTED",
		"Your OTP is 123456":                        "Your OTP is REDACTED",
		"your PIN code is: 1234, keep it":           "your PIN code is: REDACTED, keep it",
		"verification code was 884213":              "verification code was REDACTED",
		"the api key is sk_live_x":                  "the api key is REDACTED",
		"my password is swordfish":                  "my password is REDACTED",
		"Password Is Hunter2":                       "Password Is REDACTED",
		`the token is "two words"`:                  `the token is "REDACTED"`,
		"pin=1234 otp=9 passcode=x client_secret=y": "pin=REDACTED otp=REDACTED passcode=REDACTED client_secret=REDACTED",
		"cfg refresh_token: a access_key: b":        "cfg refresh_token: REDACTED access_key: REDACTED",
		"private_key=abc":                           "private_key=REDACTED",
		"the password for user bob is hunter2":      "the password for user bob is REDACTED",
		"token of the service was abc123":           "token of the service was REDACTED",
		"password set to hunter2":                   "password set to REDACTED",
		"the password is now hunter2":               "the password is now REDACTED",
		"api key changed to k-123":                  "api key changed to REDACTED",
		// Kept: no value given, or ordinary words.
		"the token is now expired":              "the token is now expired",
		"the token is still valid":              "the token is still valid",
		"the password for bob is not set":       "the password for bob is not set",
		"the job for token refresh is 42":       "the job for token refresh is 42",
		"password is required":                  "password is required",
		"token expired":                         "token expired",
		"the token was revoked at 10:00":        "the token was revoked at 10:00",
		"password is too short":                 "password is too short",
		"Password is Required.":                 "Password is Required.",
		"session was not found":                 "session was not found",
		"API key is missing or invalid":         "API key is missing or invalid",
		"the secrets are stored in the vault":   "the secrets are stored in the vault",
		"exit code is 1":                        "exit code is 1",
		"the pin is set":                        "the pin is set",
		"this is fine, the job was retried":     "this is fine, the job was retried",
		"tokens are issued by the auth service": "tokens are issued by the auth service",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q)\n got %q\nwant %q", in, got, want)
		}
		if got := Text(want); got != want {
			t.Errorf("Text(%q) = %q: not a fixed point", want, got)
		}
	}
}

// TestTextYAMLBlocks: a secret key's value on the lines after it (a
// block scalar, a folded value, a list, a nested mapping) is hidden, and
// the next key is kept.
func TestTextYAMLBlocks(t *testing.T) {
	for in, want := range map[string]string{
		"password:\n  hunter2\nuser: bob":                        "password:\n  REDACTED\nuser: bob",
		"token: |\n  abc\n  def\nnext: 1":                        "token: |\n  REDACTED\nnext: 1",
		"db:\n  password: >-\n    hunter2\n    more\n  host: db": "db:\n  password: >-\n    REDACTED\n  host: db",
		"- token: |\n    abc\n- name: x":                         "- token: |\n    REDACTED\n- name: x",
		"token:\n- abc\n- def\nuser: bob":                        "token:\nREDACTED\nuser: bob",
		"credentials:\n  user: bob\n  pass: x\nport: 1":          "credentials:\n  REDACTED\nport: 1",
		"key: !!binary |\n  AAEC\n":                              "key: !!binary |\n  REDACTED\n",
		"secret: |2 # the secret\n   x\n\n   y\nz: 1":            "secret: |2 # the secret\n   REDACTED\nz: 1",
		"password:\r\n  hunter2\r\nuser: bob":                    "password:\r\n  REDACTED\r\nuser: bob",
		"password:\nhunter2\nuser: bob":                          "password:\nREDACTED\nuser: bob",
		"password = \"\"\"hunter2\nx\"\"\"":                      "password = \"\"\"REDACTED\"\"\"",
		"    - secret: >-\n    x\n- name: y":                     "    - secret: >-\n    REDACTED\n- name: y", // indented too little for YAML
		// Kept: the next line is a key of its own.
		"password:\nuser: bob":         "password:\nuser: bob",
		"token:\n# comment\nuser: bob": "token:\n# comment\nuser: bob",
		"name:\n  x\nuser: bob":        "name:\n  x\nuser: bob",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q)\n got %q\nwant %q", in, got, want)
		}
		if got := Text(want); got != want {
			t.Errorf("Text(%q) = %q: not a fixed point", want, got)
		}
	}
}

func TestPlainWordsSorted(t *testing.T) {
	if !slices.IsSorted(plainWords) {
		t.Error("plainWords is not sorted: plainWord's binary search misses words")
	}
	for _, w := range plainWords {
		if len(w) > 16 || strings.ToLower(w) != w {
			t.Errorf("plainWords holds %q: lower-case words of at most 16 bytes only", w)
		}
	}
}

// Record redacts, and cuts before and after it, marking the cut as the
// job engines' records always have.
func TestRecord(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, tc := range []struct{ in, want string }{
		{"boom", "boom"},
		{"login failed: token=abc123", "login failed: token=" + Mark},
		{long, strings.Repeat("x", 512) + "…(cut)"},
		{"token=abc123 " + long, ("token=" + Mark + " " + long)[:512] + "…(cut)"},
		{strings.Repeat("é", 300), strings.Repeat("é", 256) + "…(cut)"},
	} {
		if got := Record(tc.in, 512); got != tc.want {
			t.Errorf("Record(%.40q…) = %.60q…, want %.60q…", tc.in, got, tc.want)
		}
		if got := Record(tc.in, 512); strings.Contains(got, "abc123") {
			t.Errorf("Record(%.40q…) kept the secret", tc.in)
		}
	}
}

// A credential before "=" goes too: a word "name=value" was judged by its
// value (and its name's meaning) alone, and kept a token that came glued to
// a value or ended in base64's padding (found by FuzzTextCanaries).
func TestPairWordName(t *testing.T) {
	for in, want := range map[string]string{
		"upstream said: Zq9w8b1c2d3e4f5g6h7i8=0000A00000A00000": "upstream said: " + Mark + "=" + Mark,
		"upstream said: Zq9w8b1c2d3e4f5g6h7i8=":                 "upstream said: " + Mark + "=",
		"retry=3 mode=fast":                                     "retry=3 mode=fast",
		"token=abc123":                                          "token=" + Mark,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}
