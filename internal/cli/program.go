package cli

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitError = 1 // the command failed while running
	ExitUsage = 2 // the command line or an input file was refused
)

// An Entry is one command line of the table.
type Entry struct {
	Path     string          // the words that select it: "serve", "sim run"
	Synopsis string          // its usage, one line or more, shown by its help and its group's
	Summary  string          // what it does, for the lists of help, one line or more
	Notes    func(io.Writer) // more help after the flags, or nil
	Run      func(c *Command, args []string) int
	Hidden   bool // left out of the lists of help (it still has its own --help)
}

// A Program is a command table and what its help says around it.
type Program struct {
	Name     string  // the binary's name, first word of every message
	About    string  // the first line of its help
	Default  string  // the path of the entry run with no arguments, or ""
	Commands []Entry // in the order help lists them
	// Nouns names the subcommands of a group when they are not called
	// "subcommands" ("lab": "lab").
	Nouns map[string]string
	// GroupAbout returns a group's paragraph in its help, or "" for
	// none; nil when no group has one.
	GroupAbout func(group string) string
}

// Run is main without the process: it runs the command line args and
// returns the exit status.
func (p *Program) Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	std := stdio{stdin, stdout, stderr}
	if len(args) == 0 && p.Default != "" {
		return p.start(p.find(p.Default), nil, std)
	}
	if len(args) == 0 || IsHelp(args[0]) {
		w, status := stdout, ExitOK
		if len(args) == 0 {
			w, status = stderr, ExitUsage
		}
		p.writeUsage(w)
		return status
	}
	name, rest := args[0], args[1:]
	if name == "--version" || name == "-version" {
		name = "version" // as the go command's tools answer it, when the table has it
	}
	// A command may have subcommands of its own (afloat drill, afloat
	// drill lever): a word after it that names one selects it, anything
	// else is the command's argument.
	if len(rest) > 0 {
		if e := p.find(name + " " + rest[0]); e != nil && p.find(name) != nil {
			return p.start(e, rest[1:], std)
		}
	}
	if e := p.find(name); e != nil {
		return p.start(e, rest, std)
	}
	subs := p.subcommands(name)
	if len(subs) == 0 {
		// One line, not the whole list: the list is a --help away.
		fmt.Fprintf(stderr, "%s: unknown command %q%s; run '%s --help' for the commands\n", p.Name, args[0], p.didYouMean(args[0]), p.Name)
		return ExitUsage
	}
	noun := p.noun(name)
	switch {
	case len(rest) == 0:
		fmt.Fprintf(stderr, "%s %s: missing %s\n\n", p.Name, name, noun)
		p.writeGroupUsage(stderr, name, subs)
		return ExitUsage
	case IsHelp(rest[0]):
		p.writeGroupUsage(stdout, name, subs)
		return ExitOK
	}
	if e := p.find(name + " " + rest[0]); e != nil {
		return p.start(e, rest[1:], std)
	}
	fmt.Fprintf(stderr, "%s %s: unknown %s %q\n\n", p.Name, name, noun, rest[0])
	p.writeGroupUsage(stderr, name, subs)
	return ExitUsage
}

// didYouMean names the command closest to a misspelt one — within two
// edits, and closer than to any other — as ` (did you mean "serve"?)`,
// or says nothing.
func (p *Program) didYouMean(name string) string {
	best, bestD, tie := "", 3, false
	seen := map[string]bool{}
	for _, e := range p.Commands {
		first, _, _ := strings.Cut(e.Path, " ")
		if e.Hidden || seen[first] {
			continue
		}
		seen[first] = true
		switch d := editDistance(name, first); {
		case d < bestD:
			best, bestD, tie = first, d, false
		case d == bestD:
			tie = true
		}
	}
	if best == "" || tie {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// IsHelp reports whether arg asks for help in place of a command.
func IsHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// find returns the entry of path, or nil.
func (p *Program) find(path string) *Entry {
	for i := range p.Commands {
		if p.Commands[i].Path == path {
			return &p.Commands[i]
		}
	}
	return nil
}

// subcommands returns the listed entries under the command name, in table
// order.
func (p *Program) subcommands(name string) []*Entry {
	var subs []*Entry
	for i := range p.Commands {
		if strings.HasPrefix(p.Commands[i].Path, name+" ") && !p.Commands[i].Hidden {
			subs = append(subs, &p.Commands[i])
		}
	}
	return subs
}

func (p *Program) noun(group string) string { return cmp.Or(p.Nouns[group], "subcommand") }

// start runs the entry on the arguments after its path.
func (p *Program) start(e *Entry, args []string, std stdio) int {
	fs := flag.NewFlagSet(e.Path, flag.ContinueOnError)
	fs.Usage = func() {} // help is printed by ParseFlags, to stdout, only when asked for
	return e.Run(&Command{FlagSet: fs, Stdin: std.in, Stdout: std.out, Stderr: std.err, prog: p.Name, entry: e}, args)
}

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// writeUsage prints the program's help: every listed command of the table.
func (p *Program) writeUsage(w io.Writer) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s [command] [subcommand] [flags]\n\nCommands:\n", p.About, p.Name)
	width := len("help")
	for _, e := range p.Commands {
		width = max(width, len(e.Path))
	}
	for _, e := range p.Commands {
		if !e.Hidden {
			writeItem(w, width, e.Path, e.Summary)
		}
	}
	writeItem(w, width, "help", "print this help")
	fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags.\n", p.Name)
}

// writeGroupUsage prints the help of a command with subcommands.
func (p *Program) writeGroupUsage(w io.Writer, name string, subs []*Entry) {
	fmt.Fprint(w, "Usage:\n")
	for _, e := range subs {
		writeIndented(w, e.Synopsis)
	}
	if p.GroupAbout != nil {
		if about := p.GroupAbout(name); about != "" {
			fmt.Fprintf(w, "\n%s", about)
		}
	}
	noun := p.noun(name)
	fmt.Fprintf(w, "\n%s%ss:\n", strings.ToUpper(noun[:1]), noun[1:])
	width := 0
	for _, e := range subs {
		width = max(width, len(e.Path)-len(name)-1)
	}
	for _, e := range subs {
		writeItem(w, width, e.Path[len(name)+1:], e.Summary)
	}
	fmt.Fprintf(w, "\nRun '%s %s <%s> --help' for its flags.\n", p.Name, name, noun)
}

// writeItem prints a name and its summary in two columns, the summary's
// later lines under its first.
func writeItem(w io.Writer, width int, name, summary string) {
	pad := strings.Repeat(" ", width+5)
	fmt.Fprintf(w, "  %-*s   %s\n", width, name, strings.ReplaceAll(summary, "\n", "\n"+pad))
}

// writeIndented prints text indented by two spaces, line by line.
func writeIndented(w io.Writer, text string) {
	for line := range strings.SplitSeq(text, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}
