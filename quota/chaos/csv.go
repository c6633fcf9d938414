package chaos

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/afloat/afloat/quota/eventlog"
)

// Series sums the offered and admitted tokens of each region over steps
// of a fixed length, for plotting: one CSV row a step.
type Series struct {
	regions []string
	index   map[string]int
	step    int64
	rows    [][]int64 // by step: offered and admitted per region
}

// NewSeries makes a series of the given regions in steps of step.
func NewSeries(regions []string, step time.Duration) *Series {
	s := &Series{regions: regions, index: map[string]int{}, step: int64(max(step, time.Millisecond))}
	for i, r := range regions {
		s.index[r] = i
	}
	return s
}

// Write implements eventlog.Writer.
func (s *Series) Write(e *eventlog.Event) {
	if e.Kind != eventlog.Admit && e.Kind != eventlog.Reject {
		return
	}
	i, ok := s.index[e.Region]
	if !ok {
		return
	}
	k := int(e.T / s.step)
	for len(s.rows) <= k {
		s.rows = append(s.rows, make([]int64, 2*len(s.regions)))
	}
	s.rows[k][2*i] += e.N
	if e.Kind == eventlog.Admit {
		s.rows[k][2*i+1] += e.N
	}
}

// WriteCSV writes the series: t_s, then offered_<region> and
// admitted_<region> for each region, then admitted_total and the
// tenant's rate R for reference, all in tokens a second.
func (s *Series) WriteCSV(w io.Writer, rate float64, steps int) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("t_s")
	for _, r := range s.regions {
		fmt.Fprintf(bw, ",offered_%s,admitted_%s", r, r)
	}
	bw.WriteString(",admitted_total,rate\n")
	per := float64(s.step) / 1e9
	for k := range steps {
		row := make([]int64, 2*len(s.regions))
		if k < len(s.rows) {
			row = s.rows[k]
		}
		bw.WriteString(strconv.FormatFloat(float64(k)*per, 'f', -1, 64))
		var total int64
		for i := range s.regions {
			fmt.Fprintf(bw, ",%s,%s", strconv.FormatFloat(float64(row[2*i])/per, 'f', -1, 64), strconv.FormatFloat(float64(row[2*i+1])/per, 'f', -1, 64))
			total += row[2*i+1]
		}
		fmt.Fprintf(bw, ",%s,%s\n", strconv.FormatFloat(float64(total)/per, 'f', -1, 64), strconv.FormatFloat(rate, 'f', -1, 64))
	}
	return bw.Flush()
}
