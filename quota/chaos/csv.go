package chaos

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/eventlog"
)

// The range of a Series' step in RunSeries.
const (
	MinStep = 10 * time.Millisecond
	MaxStep = time.Hour
)

// RunSeries runs cfg (Run) and writes its Series in steps of step (MinStep
// to MaxStep) as CSV (WriteCSV), for the tenant's regions and rate; the
// series takes the place of cfg.Log. It writes nothing when the run cannot
// be made (quota.ErrConfig, checked before it starts) or fails.
func RunSeries(w io.Writer, cfg Config, step time.Duration) (Summary, error) {
	if step < MinStep || step > MaxStep {
		return Summary{}, fmt.Errorf("%w: step %v: want %v to %v", quota.ErrConfig, step, MinStep, MaxStep)
	}
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	full := cfg.withDefaults()
	series := NewSeries(full.Tenant.Regions, step)
	cfg.Log = series
	sum, err := Run(cfg)
	if err != nil {
		return Summary{}, err
	}
	steps := int((full.Duration + step - 1) / step)
	return sum, series.WriteCSV(w, full.Tenant.Rate.Float(), steps)
}

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
