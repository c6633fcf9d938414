package sim

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
)

// Format is an output format for frames.
type Format string

// The output formats.
const (
	FormatTable Format = "table" // aligned columns for people
	FormatCSV   Format = "csv"   // every frame field, with a header row
	FormatJSONL Format = "jsonl" // one JSON object per frame
)

// ParseFormat checks a format name.
func ParseFormat(name string) (Format, error) {
	switch f := Format(name); f {
	case FormatTable, FormatCSV, FormatJSONL:
		return f, nil
	}
	return "", &ConfigError{Field: "format", Msg: fmt.Sprintf("%q: want table, csv or jsonl", name)}
}

// WriteScenarios lists the scenarios: a table for people (FormatTable), or
// one JSON object a scenario (FormatJSONL) with its name, title, briefing,
// start, minutes, boot_delay_minutes and budget_remaining. Another format
// is refused (a ConfigError), and nothing is written.
func WriteScenarios(w io.Writer, format Format) error {
	switch format {
	case FormatTable:
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSTART\tMINUTES\tBOOT\tBUDGET\tBRIEFING")
		for _, sc := range Scenarios() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d min\t%.0f%%\t%s\n", sc.Name, Clock(sc.Start), sc.Minutes, sc.BootDelay, 100*sc.Budget, sc.Briefing)
		}
		return tw.Flush()
	case FormatJSONL:
		enc := json.NewEncoder(w)
		for _, sc := range Scenarios() {
			err := enc.Encode(map[string]any{
				"name": sc.Name, "title": sc.Title, "briefing": sc.Briefing,
				"start": Clock(sc.Start), "minutes": sc.Minutes,
				"boot_delay_minutes": sc.BootDelay, "budget_remaining": sc.Budget,
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return &ConfigError{Field: "format", Msg: fmt.Sprintf("%q: want table or jsonl", format)}
}

// WriteControls describes the controls an action may use, one a line: its
// name, the values it takes, and its label.
func WriteControls(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, c := range ControlSpecs() {
		var value string
		switch c.Kind {
		case KindInteger, KindNumber:
			value = fmt.Sprintf("%s %g–%g", c.Kind, c.Min, c.Max)
		case KindBool:
			value = "true or false"
		default:
			value = "press: no value"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Control, value, c.Label)
	}
	return tw.Flush()
}

// WriteFrames writes frames in the given format. The csv and jsonl forms
// carry every field of Frame under its JSON name, in the same order.
func WriteFrames(w io.Writer, frames []Frame, format Format) error {
	bw := bufio.NewWriter(w)
	var err error
	switch format {
	case FormatJSONL:
		enc := json.NewEncoder(bw)
		for i := range frames {
			if err = enc.Encode(&frames[i]); err != nil {
				break
			}
		}
	case FormatCSV:
		err = writeCSV(bw, frames)
	case FormatTable:
		err = writeTable(bw, frames)
	default:
		_, err = ParseFormat(string(format))
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// frameColumns returns the JSON names of Frame's fields in order, with the
// index path of each, embedded structs flattened as encoding/json does.
func frameColumns() (names []string, paths [][]int) {
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			path := append(append([]int(nil), prefix...), i)
			if f.Anonymous {
				walk(f.Type, path)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
			paths = append(paths, path)
		}
	}
	walk(reflect.TypeFor[Frame](), nil)
	return names, paths
}

// writeCSV writes each cell as encoding/json writes the field, so the csv
// and jsonl forms of a run hold the same numbers.
func writeCSV(w io.Writer, frames []Frame) error {
	names, paths := frameColumns()
	cw := csv.NewWriter(w)
	if err := cw.Write(names); err != nil {
		return err
	}
	row := make([]string, len(names))
	for i := range frames {
		v := reflect.ValueOf(frames[i])
		for j, path := range paths {
			field := v.FieldByIndex(path)
			if field.Kind() == reflect.String {
				row[j] = field.String()
				continue
			}
			b, err := json.Marshal(field.Interface())
			if err != nil {
				return err
			}
			row[j] = string(b)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeTable(w io.Writer, frames []Frame) error {
	const header = "minute clock   req/s  shed%  serving booting  hit%   db%  p99ms   err%  burn1h  budget%    $/h   cost$  notes\n"
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	var line []byte
	for _, f := range frames {
		line = fmt.Appendf(line[:0], "%6d %s %7.0f %6.1f %8d %7d %5.1f %5.1f %6.0f %6.2f %7.1f %7.1f%% %6.2f %7.2f",
			f.Minute, f.Clock, f.RequestsPerS, 100*f.ShedShare, f.Serving, f.Booting,
			100*f.CacheHit, 100*f.DBUtilization, f.P99Ms, 100*f.ErrorRate, f.Burn1h,
			100*f.BudgetRemaining, f.FleetCostPerH, f.CostSoFar)
		if n := notes(f); n != "" {
			line = append(append(line, "  "...), n...)
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// notes lists what is going on in a minute, for the table.
func notes(f Frame) string {
	var n []string
	if f.Paged {
		n = append(n, "PAGE")
	}
	if f.BadBuildShare > 0 {
		n = append(n, fmt.Sprintf("bad build %.0f%%", 100*f.BadBuildShare))
	}
	if f.RollbackLeft > 0 {
		n = append(n, fmt.Sprintf("rollback %dm", f.RollbackLeft))
	}
	if f.WarmupLeft > 0 {
		n = append(n, fmt.Sprintf("warm-up %dm", f.WarmupLeft))
	}
	if !f.HeavyFeature {
		n = append(n, "no recommendations")
	}
	if !f.Autoscaling {
		n = append(n, "autoscaling off")
	}
	return strings.Join(n, ", ")
}
