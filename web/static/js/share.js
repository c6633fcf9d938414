// The share-link codec: a run travels in a URL query as
//
//   actions=16%3Aheavy_feature%3Afalse%2C28%3Arollback&noise=1&scenario=bad-deploy&seed=7
//
// exactly as sim/share.go writes and reads it: the same canonical form
// (keys in order, numbers as Go's strconv.FormatFloat(v, 'g', -1, 64)
// writes them, escapes as url.QueryEscape makes them) and the same
// refusals, field for field, in the same order. The module is pure (no
// page, no network) so that the vectors in sim/testdata/share test it as
// they test the Go side (web/share_test.go runs them in Chromium).
//
// A run is { scenario, seed, noise, minutes, actions }: minutes 0 is the
// scenario's length; an action is { minute, control, value } with no value
// for a button, true or false for a switch.

const MAX_SEED = 4294967295;
const MAX_MINUTES = 7 * 24 * 60; // sim.MaxMinutes
const MAX_QUERY_ACTIONS = 5000; // sim.MaxQueryActions
const INT64_MAX = 2n ** 63n - 1n;

// formatNumber writes v as Go's strconv.FormatFloat(v, 'g', -1, 64) does:
// the shortest digits that read back to v, in %e form (two exponent digits
// at least) when the decimal exponent is below −4 or 6 and more.
export function formatNumber(v) {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  const sign = v < 0 ? "-" : "";
  // toExponential() with no argument gives the shortest round-trip digits.
  const [mant, e] = Math.abs(v).toExponential().split("e");
  const digits = mant.replace(".", "");
  const exp = Number(e);
  if (exp < -4 || exp >= 6) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const x = Math.abs(exp);
    return `${sign}${m}e${exp < 0 ? "-" : "+"}${x < 10 ? "0" : ""}${x}`;
  }
  const dp = exp + 1; // digits before the point
  let int = "0";
  let frac = digits;
  if (dp > 0) {
    int = digits.slice(0, dp).padEnd(dp, "0");
    frac = digits.slice(dp);
  } else {
    frac = "0".repeat(-dp) + digits;
  }
  return `${sign}${int}${frac ? `.${frac}` : ""}`;
}

// Go's float syntax, as strconv.ParseFloat accepts it: decimal or hex
// (with a p exponent), underscores between digits, inf, infinity, nan.
const DEC = String.raw`\d(?:_?\d)*`;
const HEX = String.raw`[0-9a-fA-F](?:_?[0-9a-fA-F])*`;
const decimalRe = new RegExp(String.raw`^[+-]?(?:${DEC}(?:\.(?:${DEC})?)?|\.${DEC})(?:[eE][+-]?${DEC})?$`);
const hexRe = new RegExp(String.raw`^([+-]?)0[xX](_?${HEX}(?:\.(?:${HEX})?)?|\.${HEX})[pP]([+-]?${DEC})$`);

// parseNumber reads a number as strconv.ParseFloat does, or returns
// undefined where it would refuse the syntax. Out of range is ±Infinity,
// which every control's range refuses, as Go's does.
export function parseNumber(s) {
  if (/^[+-]?(inf|infinity)$/i.test(s)) return s[0] === "-" ? -Infinity : Infinity;
  if (/^nan$/i.test(s)) return NaN;
  if (decimalRe.test(s)) return Number(s.replaceAll("_", ""));
  const h = hexRe.exec(s);
  if (!h) return undefined;
  const [int, frac = ""] = h[2].replaceAll("_", "").split(".");
  const mant = BigInt(`0x${int || "0"}${frac}`);
  const exp = Number(h[3].replaceAll("_", "")) - 4 * frac.length;
  const v = Number(mant) * 2 ** exp;
  return h[1] === "-" ? -v : v;
}

// parseInt64 reads a whole number as strconv.Atoi does on a 64-bit
// machine, or returns undefined.
function parseInt64(s) {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  if (n > INT64_MAX || n < -INT64_MAX - 1n) return undefined;
  return Number(n);
}

// escape is url.QueryEscape: everything but letters, digits and -_.~ is
// percent-encoded, a space is +.
function escape(s) {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, "+");
}

function kindOf(controls, control) {
  return controls.find((c) => c.control === control)?.kind;
}

function actionItem(a, controls) {
  const kind = kindOf(controls, a.control);
  if (kind === "press") return `${a.minute}:${a.control}`;
  if (kind === "bool") return `${a.minute}:${a.control}:${a.value ? "true" : "false"}`;
  return `${a.minute}:${a.control}:${formatNumber(a.value)}`;
}

// encodeActions writes actions as minute:control[:value] items.
export function encodeActions(actions, controls) {
  return actions.map((a) => actionItem(a, controls)).join(",");
}

// encodeRun is the canonical query of a run, as sim.Config.Query().Encode()
// writes it: keys in order, minutes left out when 0.
export function encodeRun(run, controls) {
  const pairs = [];
  if (run.actions.length) pairs.push(["actions", encodeActions(run.actions, controls)]);
  if (run.minutes) pairs.push(["minutes", String(run.minutes)]);
  pairs.push(["noise", run.noise ? "1" : "0"]);
  pairs.push(["scenario", run.scenario]);
  pairs.push(["seed", String(run.seed)]);
  return pairs.map(([k, v]) => `${escape(k)}=${escape(v)}`).join("&");
}

// refuse is a decoding error: the field at fault, named as the API names
// it (seed, minutes, actions[3].value), and what is allowed.
function refuse(field, message) {
  return { error: { field, message } };
}

// decodeRun reads a run from a query (a URLSearchParams) and checks it as
// sim.ParseQuery does, given the scenarios and controls the server offers
// (GET /api/scenarios). Parameters it does not know are left alone. It
// returns { run } or { error: { field, message } }.
export function decodeRun(params, info) {
  const single = (key) => {
    const vs = params.getAll(key);
    if (vs.length > 1) return { err: refuse(key, `${key} given more than once`) };
    return { v: vs.length ? vs[0] : undefined };
  };
  const names = info.scenarios.map((s) => s.name).join(", ");
  const run = { scenario: "", seed: 0, noise: true, minutes: 0, actions: [] };

  let p = single("scenario");
  if (p.err) return p.err;
  if (p.v === undefined) return refuse("scenario", `scenario missing: want one of ${names}`);
  run.scenario = p.v;

  if ((p = single("seed")).err) return p.err;
  if (p.v !== undefined) {
    if (!/^\d+$/.test(p.v) || BigInt(p.v) > BigInt(MAX_SEED)) return refuse("seed", `want an integer from 0 to ${MAX_SEED}`);
    run.seed = Number(p.v);
  }

  if ((p = single("noise")).err) return p.err;
  if (p.v !== undefined) {
    if (p.v === "0" || p.v === "false") run.noise = false;
    else if (p.v !== "1" && p.v !== "true") return refuse("noise", "want 1 or 0 (true or false)");
  }

  if ((p = single("minutes")).err) return p.err;
  if (p.v !== undefined) {
    const n = parseInt64(p.v);
    if (n === undefined) return refuse("minutes", `want an integer from 1 to ${MAX_MINUTES}`);
    run.minutes = n;
  }

  if ((p = single("actions")).err) return p.err;
  if (p.v) {
    const items = p.v.split(",");
    if (items.length > MAX_QUERY_ACTIONS) return refuse("actions", `want at most ${MAX_QUERY_ACTIONS} actions in a link`);
    for (const [i, item] of items.entries()) {
      const parts = item.split(":");
      const at = (f) => `actions[${i}]${f ? `.${f}` : ""}`;
      if (parts.length < 2 || parts.length > 3) return refuse(at(""), "want minute:control or minute:control:value");
      const minute = parseInt64(parts[0]);
      if (minute === undefined || minute < 0) return refuse(at("minute"), "want an integer from 0");
      const kind = kindOf(info.controls, parts[1]);
      if (!kind) return refuse(at("control"), `unknown control "${parts[1]}"`);
      const a = { minute, control: parts[1] };
      if (kind === "press") {
        if (parts.length === 3) return refuse(at("value"), `${a.control} takes no value (it is a button)`);
      } else if (parts.length === 2) {
        return refuse(at("value"), `${a.control} needs a value`);
      } else if (kind === "bool") {
        if (parts[2] !== "true" && parts[2] !== "false") return refuse(at("value"), `${a.control} takes true or false`);
        a.value = parts[2] === "true";
      } else {
        const v = parseNumber(parts[2]);
        if (v === undefined) return refuse(at("value"), `${a.control} takes a number`);
        a.value = v;
      }
      run.actions.push(a);
    }
  }

  // The run as a whole (sim.Config.Validate): the scenario, the length,
  // then each action against them.
  const sc = info.scenarios.find((s) => s.name === run.scenario);
  if (!sc) return refuse("scenario", `"${run.scenario}": want one of ${names}`);
  if (run.minutes < 0 || run.minutes > MAX_MINUTES) return refuse("minutes", `want an integer from 1 to ${MAX_MINUTES}`);
  const length = run.minutes || sc.minutes;
  for (const [i, a] of run.actions.entries()) {
    if (a.minute >= length) return refuse(`actions[${i}].minute`, `want an integer from 0 to ${length - 1}`);
    const spec = info.controls.find((c) => c.control === a.control);
    const v = a.value;
    const ok =
      spec.kind === "integer"
        ? Number.isInteger(v) && v >= spec.min && v <= spec.max
        : spec.kind === "number"
          ? v >= spec.min && v <= spec.max
          : true;
    if (!ok) return refuse(`actions[${i}].value`, `${a.control} takes a value from ${spec.min} to ${spec.max}`);
  }
  return { run };
}
