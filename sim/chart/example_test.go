package chart_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/heed-go/heed/sim"
	"github.com/heed-go/heed/sim/chart"
)

// Draw the built-in "spike" scenario's policies side by side as an SVG.
func ExampleWrite() {
	s, _ := sim.Builtin("spike")
	s.Horizon = 40 * time.Second // short for the example
	results, err := sim.Run(s, sim.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var svg bytes.Buffer // or an *os.File
	if err := chart.Write(&svg, "svg", chart.Options{Title: s.Name, Faults: s.Faults}, results...); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(bytes.Contains(svg.Bytes(), []byte("<svg")), bytes.Contains(svg.Bytes(), []byte("spike: naive")))
	// Output: true true
}
