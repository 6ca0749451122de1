package deadline_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/heed-go/heed/deadline"
)

// A server adopts its caller's Timeout-Remaining, never beyond its own
// limit, and refuses work it has no time for.
func ExampleMiddleware() {
	handler := deadline.Middleware{Limit: 2 * time.Second}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		left, _ := deadline.Remaining(r.Context())
		fmt.Fprintf(w, "at most %v left", left.Round(time.Second))
	}))
	srv := httptest.NewServer(handler)
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()

	for _, v := range []string{"1s", "1h", "2ms", "soon"} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("Timeout-Remaining", v)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s: %d %s", v, resp.StatusCode, body)
		if resp.StatusCode == 200 {
			fmt.Println()
		}
	}
	// Output:
	// 1s: 200 at most 1s left
	// 1h: 200 at most 2s left
	// 2ms: 504 deadline: not enough time left
	// soon: 400 deadline: Timeout-Remaining "soon": missing digits before the unit
}
