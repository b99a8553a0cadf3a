package money

import "testing"

func TestFormat(t *testing.T) {
	cases := []struct {
		cents int64
		want  string
	}{
		{0, "0.00 EUR"},
		{5, "0.05 EUR"},
		{1234, "12.34 EUR"},
		{100000, "1,000.00 EUR"},
		{123456789, "1,234,567.89 EUR"},
		{99999, "999.99 EUR"},
	}
	for _, c := range cases {
		if got := Format(c.cents, "EUR"); got != c.want {
			t.Errorf("Format(%d) = %q, want %q", c.cents, got, c.want)
		}
	}
}

func TestPercent(t *testing.T) {
	cases := [][3]int64{{10000, 19, 1900}, {1050, 19, 200}, {-1050, 19, -200}, {1, 50, 1}, {-1, 50, -1}}
	for _, c := range cases {
		if got := Percent(c[0], c[1]); got != c[2] {
			t.Errorf("Percent(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}

func TestSum(t *testing.T) {
	if Sum(1, 2, -3, 10) != 10 || Sum() != 0 {
		t.Error("Sum")
	}
}
