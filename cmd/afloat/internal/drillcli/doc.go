// Package drillcli is afloat's drill commands: afloat drill (the drill on
// a port of its own, its token, its postmortem when it ends), afloat drill
// lever (a lever pulled through the drill's API) and afloat drill rules
// (a rules file scaled to a drill's speed) — their flags, their refusals
// and a call into package drill. Package main lists the commands and hands
// each its command line:
//
//	{Path: "drill lever", Run: drillcli.Lever, …}
package drillcli
