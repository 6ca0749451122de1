package curl_test

import (
	"flag"
	"fmt"
	"os"

	"github.com/heed-go/heed/cmd/heed/internal/curl"
)

// Combined one-letter flags, as curl takes them.
func ExampleSplitShortFlags() {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	fs.Bool("s", false, "")
	fs.Bool("f", false, "")
	fs.String("o", "", "")
	args, _ := curl.SplitShortFlags(fs, []string{"-fso", "out.html", "https://example.com/"})
	fmt.Println(args)
	// Output: [-f -s -o out.html https://example.com/]
}

// A -w format with its variables filled in.
func ExampleWriteOut() {
	var w curl.WriteOut
	if err := w.Set(`%{http_code} after %{num_retries} retries\n`); err != nil {
		fmt.Println(err)
	}
	w.Write(os.Stdout, &curl.Stats{Attempts: 3, Hops: 1})
	// Output: 000 after 2 retries
}
