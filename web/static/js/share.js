// The share-link codec: a run travels in a URL query as
//
//   scenario=bad-deploy&seed=7&noise=1&actions=16:heavy_feature:false,28:rollback
//
// the same form sim/share.go reads and writes. It is pure (no page, no
// network), so that the shared vectors in sim/testdata test it as they
// test the Go side.

// encodeActions writes actions as the share-link form minute:control[:value].
export function encodeActions(actions, controls) {
  return actions
    .map((a) => {
      const kind = controls.find((c) => c.control === a.control).kind;
      if (kind === "press") return `${a.minute}:${a.control}`;
      if (kind === "bool") return `${a.minute}:${a.control}:${a.value ? "true" : "false"}`;
      return `${a.minute}:${a.control}:${a.value}`;
    })
    .join(",");
}

// decodeActions reads them back; the server checks what it is given.
export function decodeActions(text, controls) {
  if (!text) return [];
  return text.split(",").map((item) => {
    const [m, control, v] = item.split(":");
    const a = { minute: Number(m), control };
    const kind = controls.find((c) => c.control === control)?.kind;
    if (kind === "bool") a.value = v === "true";
    else if (kind !== "press") a.value = Number(v);
    return a;
  });
}

// encodeRun is the query of a run, with extra parameters after it.
export function encodeRun(run, controls, extra = {}) {
  const p = new URLSearchParams();
  p.set("scenario", run.scenario);
  p.set("seed", String(run.seed));
  p.set("noise", run.noise ? "1" : "0");
  if (run.actions.length) p.set("actions", encodeActions(run.actions, controls));
  for (const [k, v] of Object.entries(extra)) p.set(k, String(v));
  return p;
}
