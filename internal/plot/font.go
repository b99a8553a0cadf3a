package plot

import (
	"image"
	"image/color"
	"unicode"
)

// glyphs is a 3×5 pixel font: five rows of three bits, the high bit on
// the left. Lower-case letters are drawn as capitals; other runes missing
// here as a blank.
var glyphs = map[rune][5]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 7, 1, 7},
	'4': {5, 5, 7, 1, 1}, '5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 1, 1, 1},
	'8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7},
	'.': {0, 0, 0, 0, 2}, ',': {0, 0, 0, 2, 4}, '-': {0, 0, 7, 0, 0}, '+': {0, 2, 7, 2, 0},
	':': {0, 2, 0, 2, 0}, '/': {1, 1, 2, 4, 4}, '(': {2, 4, 4, 4, 2}, ')': {2, 1, 1, 1, 2},
	'_': {0, 0, 0, 0, 7}, '=': {0, 7, 0, 7, 0}, '%': {5, 1, 2, 4, 5}, '\'': {2, 2, 0, 0, 0},
	'A': {2, 5, 7, 5, 5}, 'B': {6, 5, 6, 5, 6}, 'C': {3, 4, 4, 4, 3}, 'D': {6, 5, 5, 5, 6},
	'E': {7, 4, 6, 4, 7}, 'F': {7, 4, 6, 4, 4}, 'G': {3, 4, 5, 5, 3}, 'H': {5, 5, 7, 5, 5},
	'I': {7, 2, 2, 2, 7}, 'J': {1, 1, 1, 5, 2}, 'K': {5, 5, 6, 5, 5}, 'L': {4, 4, 4, 4, 7},
	'M': {5, 7, 7, 5, 5}, 'N': {6, 5, 5, 5, 5}, 'O': {2, 5, 5, 5, 2}, 'P': {6, 5, 6, 4, 4},
	'Q': {2, 5, 5, 6, 3}, 'R': {6, 5, 6, 5, 5}, 'S': {3, 4, 2, 1, 6}, 'T': {7, 2, 2, 2, 2},
	'U': {5, 5, 5, 5, 7}, 'V': {5, 5, 5, 5, 2}, 'W': {5, 5, 7, 7, 5}, 'X': {5, 5, 2, 5, 5},
	'Y': {5, 5, 2, 2, 2}, 'Z': {7, 1, 2, 4, 7},
}

// advance is the width of one glyph and the gap after it, in pixels.
const advance = 4 * scale

func textWidth(s string) int {
	n := 0
	for range s {
		n++
	}
	if n == 0 {
		return 0
	}
	return n*advance - scale
}

// text draws s with its top-left corner at (x, y).
func text(img *image.RGBA, x, y int, s string, col color.RGBA) {
	for _, r := range s {
		g := glyphs[unicode.ToUpper(r)]
		for row, bits := range g {
			for c := range 3 {
				if bits&(4>>c) == 0 {
					continue
				}
				for i := range scale {
					for j := range scale {
						p := image.Pt(x+c*scale+i, y+row*scale+j)
						if p.In(img.Rect) {
							img.SetRGBA(p.X, p.Y, col)
						}
					}
				}
			}
		}
		x += advance
	}
}
