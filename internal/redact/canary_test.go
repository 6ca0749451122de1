package redact

import (
	"fmt"
	"strings"
	"testing"
)

// texts are realistic texts with secret slots: log lines, error messages,
// URLs, JSON bodies, header dumps and connection strings. %[1]s is a slot
// for a secret of any length and alphabet (the value of a secret key, a
// password, a bearer token, a fragment); %[2]s a slot for a long random
// token with nothing around it that says it is secret, which only the
// credential rule ([Credential]) can find.
var texts = []string{
	// Log lines and error messages.
	`level=error msg="login failed" user=bob token=%[1]s`,
	`login failed: token=%[1]s pwd=%[1]s`,
	`time=2026-12-04T10:00:00Z level=warn msg=retrying password=%[1]s attempt=2`,
	`request failed: Authorization: Bearer %[1]s`,
	`calling api with X-Api-Key: %[1]s`,
	`error: password: %[1]s (attempt 3)`,
	`auth header was "Basic %[1]s"`,
	`session expired for sid=%[1]s`,
	`cfg={User:bob Password:%[1]s Host:db}`,
	`secret = '%[1]s'`,
	`exec: mysql --password %[1]s --user bob`,
	`exec: psql --token=%[1]s`,
	`handler: bearer %[1]s rejected`,
	`upstream said: %[2]s`,
	`the key is %[2]s.`,
	`client_secret: "%[1]s", client_id: "app"`,
	`private_key=%[1]s`,
	`jwt: %[1]s`,
	`signature=%[1]s; expires=3600`,
	`apikey:%[1]s`,
	`credential=%[1]s`,
	// Prose: a key, a verb and the secret.
	`login failed: password is %[1]s`,
	`the token was %[1]s.`,
	`your verification code is: %[1]s`,
	`Your OTP is %[1]s, valid 5 min`,
	`the secret: %[1]s`,
	`the password for user bob is %[1]s`,
	`password set to "%[1]s" by admin`,
	`pin=%[1]s otp=%[1]s passcode=%[1]s`,
	`refresh_token=%[1]s access_key=%[1]s`,
	// YAML and TOML: the value on the lines after its key.
	"db:\n  password:\n    %[1]s\n  user: bob",
	"token: |\n  %[1]s\n  %[2]s\nnext: 1",
	"- secret: >-\n    %[1]s\n- name: x",
	"password:\n%[1]s\nuser: bob",
	"api_keys:\n- %[1]s\n- %[2]s",
	`client_secret = """%[1]s"""`,
	// JSON bodies, as stored or quoted in an error.
	`{"level":"error","msg":"bad creds","password":"%[1]s","user":"bob"}`,
	`{"token": "%[1]s", "n": 1}`,
	`body: {\"api_key\":\"%[1]s\",\"q\":1}`,
	`{"auth":{"user":"bob","pass":"%[1]s"}}`,
	`{"session": %[1]s}`,
	`{"credentials": ["%[1]s", "x"]}`,
	`map[Authorization:[Bearer %[1]s] Accept:[*/*]]`,
	// URLs, alone and in messages.
	`GET https://api.example.com/v1/items?page=2&access_token=%[1]s failed`,
	`https://bob:%[1]s@db.example.com:5432/app`,
	`https://%[1]s@api.example.com/v1`,
	`https://example.com/callback#access_token=%[1]s&state=xyz`,
	`https://example.com/callback#%[1]s`,
	`https://example.com/doc#intro-%[1]s`,
	`https://hooks.example.com/hooks/%[1]s`,
	`https://hooks.example.com/services/T000/B000/%[2]s`,
	`https://api.telegram.org/bot123456:%[2]s/sendMessage`,
	`Post "https://api.example.com/v1/charge?key=%[1]s": dial tcp 10.0.0.1:443: connect: connection refused`,
	`Get "http://u:***@h/x?sig=%[1]s#frag-%[1]s": EOF`,
	`redirect to /login?next=/a&session=%[1]s`,
	`see https://example.com/reset/token/%[1]s for details`,
	`POST https://hooks.slack.com/services/T0A1B2C3/B0D4E5F6/%[1]s: 404 Not Found`,
	`https://discord.com/api/webhooks/123456789012345678/%[1]s?wait=true`,
	`https://example.com/webhook/v1/%[1]s/send`,
	`exec: curl -u bob:%[1]s https://example.com/`,
	// XML and PEM, as a SOAP fault or a config dump quotes them.
	`<soap:Fault><detail><password>%[1]s</password><user>bob</user></detail></soap:Fault>`,
	`<ns:AuthToken>%[1]s</ns:AuthToken>`,
	`password=<%[1]s>`,
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEow%[1]s\n%[2]s==\n-----END RSA PRIVATE KEY-----",
	"key file: -----BEGIN OPENSSH PRIVATE KEY----- b3Blbn%[1]s -----END OPENSSH PRIVATE KEY-----",
	// Header dumps.
	"> GET / HTTP/1.1\n> Host: example.com\n> Authorization: Bearer %[1]s\n> Cookie: theme=dark; sid=%[1]s\n> Accept: */*\n",
	"< HTTP/1.1 200 OK\n< Set-Cookie: session=%[1]s; Path=/; HttpOnly\n< Content-Length: 2\n",
	"Cookie: theme=dark; other=%[1]s\nAccept: */*",
	"X-Auth-Token: %[1]s\r\nAccept: */*\r\n",
	"Proxy-Authorization: Basic %[1]s\r\n",
	"Authorization: token %[1]s",
	`headers: Authorization: Digest username="bob", response="%[1]s"`,
	// Connection strings.
	`postgres://heed:%[1]s@127.0.0.1:5432/heed?sslmode=disable`,
	`open db: host=db user=heed password=%[1]s dbname=heed`,
	`host=db password='%[1]s x' dbname=heed`,
	`mysql://root:%[1]s@tcp(127.0.0.1:3306)/db`,
	`dsn root:%[1]s@tcp(127.0.0.1:3306)/db`,
	`redis://:%[1]s@cache:6379/0`,
	`amqp://guest:%[1]s@rabbit:5672/`,
}

// tokenChars is the alphabet of planted secrets: what tokens, passwords
// and keys are made of in the texts above, less the characters that end
// them there (space, quotes, separators).
const tokenChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~+"

// canaries makes the two secrets planted in a text from raw bytes: a
// short one of any shape ("Zq" and up to 38 bytes of tokenChars; "Zq"
// makes it findable), and a long random-looking one.
func canaries(raw []byte) (short, long string) {
	var b strings.Builder
	b.WriteString("Zq")
	for i, c := range raw {
		if i >= 38 {
			break
		}
		b.WriteByte(tokenChars[int(c)%len(tokenChars)])
	}
	short = b.String()
	// The long one changes character class at every byte.
	var l strings.Builder
	l.WriteString("Zq9")
	for i := 0; l.Len() < 20 || i < len(raw); i++ {
		c := byte(i)
		if i < len(raw) {
			c = raw[i]
		}
		l.WriteByte("abcdefghijklmnopqrstuvwxyz"[int(c)%26])
		l.WriteByte("0123456789"[int(c)%10])
		if l.Len() >= 40 {
			break
		}
	}
	return short, l.String()
}

// leaks reports whether out shows any part of the secret c that in did not
// show without it: c itself, or its first or last 6 bytes when they hold a
// letter or a digit, outside Mark. Punctuation alone says nothing of a
// secret, and Text reads dots after a token as the sentence's, not the
// token's ("…/services/T0A1B2C3/B0D4E5F6/Zq......: 404" keeps "......").
func leaks(out, c string) bool {
	out = strings.ReplaceAll(out, Mark, "\x00") // the mark's letters are not the secret's
	if strings.Contains(out, c) {
		return true
	}
	if len(c) <= 6 {
		return false
	}
	for _, a := range []string{c[:6], c[len(c)-6:]} {
		if strings.ContainsFunc(a, isAlnumRune) && strings.Contains(out, a) {
			return true
		}
	}
	return false
}

func isAlnumRune(r rune) bool { return r < 0x80 && isAlnum(byte(r)) }

// plant returns the text of template i with the secrets planted, between
// before and after (any printable text around it, as in a longer log).
func plant(i int, before, after string, short, long string) string {
	return before + fmt.Sprintf(texts[i%len(texts)], short, long) + after
}

// seeds are the secrets of the seed corpus: short, like a real password,
// and long.
var seeds = [][]byte{[]byte("hunter2"), []byte("abc123"), []byte("x"), []byte("tok_live_51HxQp2Lm9Zr4Tv8")}

// TestTextCanaries is the seed corpus of FuzzTextCanaries as an ordinary
// test: every text with every seed secret, alone and inside other text.
func TestTextCanaries(t *testing.T) {
	found := 0
	for i := range texts {
		for _, raw := range seeds {
			short, long := canaries(raw)
			for _, around := range [][2]string{{"", ""}, {"job 7 failed: ", "\nnext line"}, {"x", "y"}} {
				in := plant(i, around[0], around[1], short, long)
				out := Text(in)
				for _, c := range []string{short, long} {
					if strings.Contains(in, c) && leaks(out, c) {
						found++
						t.Errorf("Text(%q)\n = %q: %q shows", in, out, c)
					}
				}
				if again := Text(out); again != out {
					t.Errorf("Text(%q) = %q, but Text of that is %q", in, out, again)
				}
			}
		}
	}
	if found > 0 {
		t.Logf("%d canaries found", found)
	}
}

// FuzzTextCanaries plants secrets in random positions of realistic texts
// (the slots of texts, between arbitrary text before and after) and finds
// none of them in what Text returns.
func FuzzTextCanaries(f *testing.F) {
	for i := range texts {
		f.Add(uint(i), "", "", seeds[i%len(seeds)])
	}
	f.Add(uint(3), "job 1: ", " (retrying)", []byte("s3cr3t"))
	f.Fuzz(func(t *testing.T, i uint, before, after string, raw []byte) {
		short, long := canaries(raw)
		// The text without the secrets ("Zq" before "https://..." holds
		// "Zqh") must not hold them already.
		if bare := plant(int(i%uint(len(texts))), before, after, "", ""); leaks(bare, short) || leaks(bare, long) {
			t.Skip("the text around already holds the secret")
		}
		in := plant(int(i%uint(len(texts))), before, after, short, long)
		out := Text(in)
		for _, c := range []string{short, long} {
			if strings.Contains(in, c) && leaks(out, c) {
				t.Errorf("Text(%q)\n = %q: %q shows", in, out, c)
			}
		}
	})
}
