package duration

import "time"

// Round rounds d to three significant digits, as heed's decision lines
// print durations: 19.3s, not 19.349822217s.
func Round(d time.Duration) time.Duration {
	for unit := time.Nanosecond; unit < time.Hour; unit *= 10 {
		if d < 1000*unit && d > -1000*unit {
			return d.Round(unit)
		}
	}
	return d.Round(time.Second)
}
