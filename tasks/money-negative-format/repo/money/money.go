// Package money formats amounts held as integer cents.
package money

import (
	"fmt"
	"strconv"
)

// Format renders cents as "1,234.56 EUR": two decimals, thousands grouped
// with commas, the currency code after the number.
func Format(cents int64, currency string) string {
	whole := cents / 100
	frac := cents % 100
	return fmt.Sprintf("%s.%02d %s", group(whole), frac, currency)
}

// group inserts a comma every three digits from the right.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	if len(s) <= 3 {
		return s
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	pre := len(s) % 3
	if pre > 0 {
		out = append(out, s[:pre]...)
	}
	for i := pre; i < len(s); i += 3 {
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(out, s[i:i+3]...)
	}
	return string(out)
}

// Sum adds amounts.
func Sum(cents ...int64) int64 {
	var t int64
	for _, c := range cents {
		t += c
	}
	return t
}

// Percent returns pct percent of cents, rounded half away from zero.
func Percent(cents int64, pct int64) int64 {
	x := cents * pct
	if x >= 0 {
		return (x + 50) / 100
	}
	return (x - 50) / 100
}
