package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Histogram is the distribution of one measured quantity (the failover times of many
// sessions, say) as counts in bins of equal width from zero; WriteAll writes it as
// <Name>.svg, a bar chart with its marks as labelled vertical lines.
type Histogram struct {
	Name   string  `json:"name"` // file name stem, e.g. "failover"
	Title  string  `json:"title"`
	XLabel string  `json:"xLabel"` // the quantity and its unit, e.g. "failover time (ms)"
	YLabel string  `json:"yLabel"`
	Width  float64 `json:"width"`  // of a bin, in the unit of XLabel
	Counts []int   `json:"counts"` // Counts[i] holds the values in [i·Width, (i+1)·Width)
	Marks  []Mark  `json:"marks,omitempty"`
}

// Mark is a vertical line of a Histogram: a percentile or a bar to meet.
type Mark struct {
	Name string  `json:"name"`
	X    float64 `json:"x"`
}

// NewHistogram counts values (none negative) in about bins bins of a round width that
// covers them from zero.
func NewHistogram(name, title, xLabel, yLabel string, values []float64, bins int) Histogram {
	h := Histogram{Name: name, Title: title, XLabel: xLabel, YLabel: yLabel}
	hi := 0.0
	for _, v := range values {
		hi = math.Max(hi, v)
	}
	h.Width = 1 // nothing above zero: one bin
	if hi > 0 {
		h.Width = roundStep(hi / float64(max(bins, 1)))
	}
	n := int(hi/h.Width) + 1
	h.Counts = make([]int, n)
	for _, v := range values {
		h.Counts[min(max(int(v/h.Width), 0), n-1)]++
	}
	return h
}

// AddHistogram appends a histogram; WriteAll writes one SVG file per histogram.
func (r *Report) AddHistogram(h Histogram) { r.Histograms = append(r.Histograms, h) }

// roundStep returns the smallest of 1, 2, 2.5 and 5 times a power of ten that is at
// least raw.
func roundStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// SVG renders the histogram as a standalone SVG document: one bar per bin, with its
// count above it, linear axes from zero, and each mark a dashed line with its name.
func (h Histogram) SVG() []byte {
	width := h.Width
	if width <= 0 {
		width = 1
	}
	top := 0
	for _, c := range h.Counts {
		top = max(top, c)
	}
	xmax := width * float64(len(h.Counts))
	for _, m := range h.Marks {
		xmax = math.Max(xmax, m.X)
	}
	xticks := ticks(0, math.Max(xmax, width))
	yticks := ticks(0, math.Max(float64(top), 1))
	xmax, ymax := xticks[len(xticks)-1], yticks[len(yticks)-1]

	pw := float64(svgWidth - plotLeft - plotRight)
	ph := float64(svgHeight - plotTop - plotBottom)
	px := func(x float64) float64 { return plotLeft + x/xmax*pw }
	py := func(y float64) float64 { return plotTop + ph - y/ymax*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, html.EscapeString(h.Title))
	for _, t := range xticks {
		x := px(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", x, plotTop+ph, x, plotTop+ph+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, plotTop+ph+16, tickLabel(t))
	}
	for _, t := range yticks {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, y, plotLeft+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, y+4, tickLabel(t))
	}
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		x0, x1 := px(float64(i)*width), px(float64(i+1)*width)
		y := py(float64(c))
		fmt.Fprintf(&b, `<rect class="bin" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="white" stroke-width="0.5"/>`+"\n",
			x0, y, math.Max(x1-x0, 0.5), plotTop+ph-y, palette[0])
		if x1-x0 >= 14 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%d</text>`+"\n", (x0+x1)/2, y-3, c)
		}
	}
	fmt.Fprintf(&b, `<path d="M%d %d V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", plotLeft, plotTop, plotTop+ph, plotLeft+pw)
	for i, m := range h.Marks {
		x := px(m.X)
		color := palette[(i+1)%len(palette)]
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"/>`+"\n", x, plotTop, x, plotTop+ph, color)
		ly := plotTop + 10 + 20*i
		lx := svgWidth - plotRight + 12
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"/>`+"\n", lx, ly, lx+20, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s %s</text>`+"\n", lx+26, ly+4, html.EscapeString(m.Name), tickLabel(roundTo3(m.X)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", plotLeft+pw/2, svgHeight-16, html.EscapeString(h.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", plotTop+ph/2, html.EscapeString(h.YLabel))
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// roundTo3 rounds v to three significant digits, for a label.
func roundTo3(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}
