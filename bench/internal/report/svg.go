package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	svgWidth, svgHeight = 720, 440
	plotLeft, plotRight = 80, 170 // the right margin holds the legend
	plotTop, plotBottom = 40, 60
)

// palette distinguishes up to eight series; more cycle.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// SVG renders the chart as a standalone SVG document: linear axes from zero (or the data
// minimum when negative) to a rounded maximum, five ticks each, one polyline with markers
// per series and a legend.
func (c Chart) SVG() []byte {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			xmin, xmax = math.Min(xmin, p.X), math.Max(xmax, p.X)
			ymin, ymax = math.Min(ymin, p.Y), math.Max(ymax, p.Y)
		}
	}
	if math.IsInf(xmin, 0) { // no points
		xmin, xmax, ymax = 0, 1, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	xticks := ticks(xmin, xmax)
	yticks := ticks(ymin, ymax)
	xmin, xmax = math.Min(xmin, xticks[0]), math.Max(xmax, xticks[len(xticks)-1])
	ymin, ymax = math.Min(ymin, yticks[0]), math.Max(ymax, yticks[len(yticks)-1])

	pw := float64(svgWidth - plotLeft - plotRight)
	ph := float64(svgHeight - plotTop - plotBottom)
	px := func(x float64) float64 { return plotLeft + (x-xmin)/(xmax-xmin)*pw }
	py := func(y float64) float64 { return plotTop + ph - (y-ymin)/(ymax-ymin)*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, html.EscapeString(c.Title))
	for _, t := range xticks {
		x := px(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, plotTop, x, plotTop+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, plotTop+ph+16, tickLabel(t))
	}
	for _, t := range yticks {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, y, plotLeft+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, y+4, tickLabel(t))
	}
	fmt.Fprintf(&b, `<path d="M%d %d V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", plotLeft, plotTop, plotTop+ph, plotLeft+pw)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", plotLeft+pw/2, svgHeight-16, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", plotTop+ph/2, html.EscapeString(c.YLabel))
	for i, s := range c.Series {
		color := palette[i%len(palette)]
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.X), py(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		for _, p := range s.Points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(p.X), py(p.Y), color)
		}
		ly := plotTop + 10 + 20*i
		lx := svgWidth - plotRight + 12
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", lx, ly, lx+20, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+26, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// tickLabel prints a round tick value without trailing zeros: 2, 2.5, 50,000.
func tickLabel(v float64) string {
	if math.Abs(v) >= 1000 {
		return FormatNumber(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// ticks returns about five round tick values covering [lo, hi].
func ticks(lo, hi float64) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for k := math.Floor(lo / step); ; k++ {
		out = append(out, k*step)
		if k*step >= hi {
			return out
		}
	}
}
