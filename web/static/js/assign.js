// The assignment lab: a least-used pool on Redis (or the in-process demo
// server, labelled as such), its counts live, picks by hand or as a steady
// load, remove/restore under a policy, cooldowns by hand, the last resort
// and the LLM demo, with a chart of picks per member over time, and the
// leases in flight under a concurrency cap (GET /api/assign, POST
// /api/assign/{create,pick,remove,restore,reset,load,cooldown,settings,
// llm,acquire,release,concurrency}). GET only reads: when the pool is not there the
// page asks POST /api/assign/create for it.
import { t } from "./i18n.js";
import { LiveChart, colours } from "./charts.js";

const $ = (id) => document.getElementById(id);
const POLL_MS = 500;

let last = null; // the last state, to redraw in another language
let poller = 0; // the timer of the next poll
let pollChain = 0; // the chain of polls that may go on; others stop
// A poll that was sent before a change was answered may come back after
// it and would draw the pool as it was, flipping a removed member back to
// "active" under the user's pointer. So polls are drawn only when no
// change is in flight and none has been answered since the poll was sent;
// changes are drawn in the order they were made.
let changing = 0; // changes in flight
let changed = 0; // changes answered so far
let made = 0; // changes made so far
let drawnChange = 0; // the newest change drawn
const statuses = {}; // element id → [key, params], likewise
// Whether the page has asked to create the absent pool and been answered
// (created or not): it asks once, and again only after it has seen the
// pool exist. A refusal (something of the pool is on the Redis that the
// lab did not make) leaves the pool read-only.
let createAnswered = false;

function say(id, key, params) {
  statuses[id] = key ? [key, params] : null;
  $(id).textContent = key ? t(key, params) : "";
}

async function call(path, body) {
  const opts = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const res = await fetch(path, opts);
  const answer = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) {
    const err = new Error(answer.error || `HTTP ${res.status}`);
    err.answer = answer; // a 429 carries retry_after_s
    throw err;
  }
  return answer;
}

// act sends a change, shows the pool it leaves, and says what happened.
async function act(path, body, message) {
  const mine = ++made;
  changing++;
  try {
    const answer = await call(path, body);
    const st = answer.state || answer;
    if (mine > drawnChange) {
      drawnChange = mine;
      draw(st);
    }
    const m = message(answer, st);
    if (m) say("assign-status", m[0], m[1]);
  } catch (err) {
    if (err.answer && err.answer.retry_after_s) say("assign-status", "assign.all_cooling", { seconds: err.answer.retry_after_s });
    else say("assign-status", "error.api", { message: err.message });
  } finally {
    changing--;
    changed++;
  }
}

// picked says what a pick did: in the LLM demo, which key answered 429.
function picked(a, st) {
  if (a.answered_429 && a.answered_429.length && st.llm) {
    return ["assign.answered_429", { member: a.answered_429.at(-1), seconds: st.llm.retry_after_s, picks: a.picked.length }];
  }
  return ["assign.picked", { n: a.picked.length, member: a.picked.at(-1) }];
}

export function setupAssign() {
  $("assign-pick-1").addEventListener("click", () => act("/api/assign/pick", { n: 1 }, picked));
  $("assign-pick-100").addEventListener("click", () => act("/api/assign/pick", { n: 100 }, picked));
  $("assign-last-resort").addEventListener("change", () => {
    const policy = $("assign-last-resort").value;
    act("/api/assign/settings", { last_resort: policy }, () => ["assign.last_resort_set", { policy: t(`assign.last_resort.${policy}`) }]);
  });
  $("assign-llm").addEventListener("click", () => {
    const on = !(last && last.llm);
    act("/api/assign/llm", { on }, () => (on ? null : ["assign.llm_off", {}]));
  });
  $("assign-load").addEventListener("click", () => {
    const running = last && last.load.running;
    act("/api/assign/load", { rate: running ? 0 : Number($("assign-rate").value) }, () => null);
  });
  $("assign-reset").addEventListener("click", () =>
    act("/api/assign/reset", { members: 8 }, (a, st) => ["assign.reset_done", { n: st.members.length }]),
  );
  $("assign-cap").addEventListener("change", () => {
    const cap = Number($("assign-cap").value);
    act("/api/assign/concurrency", { cap }, () => (cap ? ["assign.cap_set", { n: cap }] : ["assign.cap_cleared", {}]));
  });
  $("assign-acquire").addEventListener("click", () => {
    const seconds = Number($("assign-lease-for").value);
    act("/api/assign/acquire", { seconds }, (a) => ["assign.acquired", { id: a.lease.id, member: a.lease.member, seconds }]);
  });
  $("assign-leases").addEventListener("click", (e) => {
    const b = e.target.closest("button[data-lease]");
    if (!b) return;
    const id = b.dataset.lease;
    const member = b.dataset.leaseMember;
    act("/api/assign/release", { id, member }, (a) => [a.was_open ? "assign.released" : "assign.release_late", { id, member }]);
  });
  $("assign-policy").addEventListener("change", policyHelp);
  // One listener for the table's buttons, which are redrawn on every poll.
  $("assign-table").addEventListener("click", (e) => {
    const c = e.target.closest("button[data-cool]");
    if (c) {
      const member = c.dataset.cool;
      const seconds = Number($("assign-cool-for").value);
      act("/api/assign/cooldown", { member, seconds }, () => ["assign.cooled", { member, seconds }]);
      return;
    }
    const b = e.target.closest("button[data-member]");
    if (!b) return;
    const member = b.dataset.member;
    if (b.dataset.action === "remove") {
      act("/api/assign/remove", { member }, () => ["assign.removed", { member }]);
    } else {
      const policy = $("assign-policy").value;
      act("/api/assign/restore", { member, policy }, (a, st) => [
        "assign.restored",
        { member, count: st.members.find((m) => m.member === member).count, policy: t(`assign.policy.${policy}`) },
      ]);
    }
  });
  policyHelp();
}

function policyHelp() {
  $("assign-policy-help").textContent = t(`assign.policy_help.${$("assign-policy").value}`);
}

// renderAssign shows the view and polls the pool while it is shown. Each
// poll is sent POLL_MS after the one before was answered, never on a fixed
// interval: on a slow server, polls sent every POLL_MS pile up past the
// browser's six connections to the host and hold back every other request
// of the page, a language's catalogue among them. Showing the view again
// (a new language, say) starts a new chain; the old one stops at its next
// step.
export async function renderAssign() {
  const chain = ++pollChain;
  clearTimeout(poller);
  await refresh();
  pollAfter(chain);
}

function pollAfter(chain) {
  if (chain !== pollChain) return;
  poller = setTimeout(async () => {
    await refresh();
    pollAfter(chain);
  }, POLL_MS);
}

// leaveAssign stops polling when another view is shown.
export function leaveAssign() {
  pollChain++;
  clearTimeout(poller);
}

async function refresh() {
  if (changing) return;
  const since = changed;
  try {
    const st = await call("/api/assign");
    if (st.exists) createAnswered = false;
    if (!st.exists && !createAnswered) {
      await act("/api/assign/create", { members: 8 }, () => {
        createAnswered = true;
        return null;
      });
      return;
    }
    if (!changing && changed === since) draw(st);
  } catch (err) {
    say("assign-status", "error.api", { message: err.message });
  }
}

export function relabelAssign() {
  policyHelp();
  if (chart) chart.build();
  if (last) draw(last);
  for (const [id, msg] of Object.entries(statuses)) {
    if (msg) $(id).textContent = t(msg[0], msg[1]);
  }
}

function draw(st) {
  last = st;
  if (window.afloat) window.afloat.assign = st; // for the browser test
  $("assign-demo").hidden = !st.demo;
  // A pool the console did not create is shown, never changed, unless the
  // operator allowed it (afloat serve --assign-write): say so, and turn
  // off every control that would change it.
  // (A pool not there yet is being created: not read-only, unless the
  // lab was refused it.)
  const readOnly = !st.writable && (st.exists || createAnswered);
  $("assign-read-only").hidden = !readOnly;
  $("assign-read-only").textContent = readOnly ? t("assign.read_only", { pool: st.pool }) : "";
  for (const id of ["assign-pick-1", "assign-pick-100", "assign-rate", "assign-load", "assign-reset", "assign-policy", "assign-cool-for", "assign-last-resort", "assign-llm", "assign-cap", "assign-lease-for", "assign-acquire"]) {
    $(id).disabled = !st.writable;
  }
  if (document.activeElement !== $("assign-last-resort")) $("assign-last-resort").value = st.last_resort;
  $("assign-llm").textContent = t(st.llm ? "assign.llm_stop" : "assign.llm_start");
  $("assign-llm-help").hidden = !st.llm;
  if (st.llm) {
    say("assign-llm-help", "assign.llm_help", {
      keys: st.members.length,
      rpm: st.llm.rpm,
      burst: st.llm.burst,
      key: st.llm.failing_key,
      every: st.llm.fail_every,
      seconds: st.llm.retry_after_s,
    });
  } else {
    say("assign-llm-help", null);
  }
  $("assign-server").textContent = t("assign.server", { server: st.server, pool: st.pool });
  $("assign-picks-per-s").textContent = Math.round(st.picks_per_s).toLocaleString("en");
  $("assign-total").textContent = st.total.toLocaleString("en");
  $("assign-spread").textContent = String(st.spread);
  $("assign-reloads").textContent = String(st.script_reloads);
  $("assign-load").textContent = t(st.load.running ? "assign.load_stop" : "assign.load_start");
  $("assign-load-status").textContent = st.load.running
    ? t("assign.load_running", { rate: st.load.rate, seconds: st.load.seconds_left })
    : t("assign.load_off");

  const top = Math.max(1, ...st.members.map((m) => m.count));
  const tbody = $("assign-table").tBodies[0];
  // Rows in name order, so that a button stays where it was while the
  // counts move. Rows are updated in place, not rebuilt: a poll every
  // 500 ms that replaced the button under the pointer between mousedown
  // and mouseup would swallow the click, and would drop keyboard focus.
  const members = [...st.members].sort((a, b) => (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
  const had = new Map([...tbody.rows].map((tr) => [tr.dataset.member, tr]));
  const rows = members.map((m) => {
    const tr = had.get(m.member) || newRow(m.member);
    const [, count, bar, state, weight, cooling, streak, limit, inFlight, action] = tr.cells;
    const full = m.concurrency > 0 && (m.in_flight || 0) >= m.concurrency;
    tr.className = m.active ? (m.cooling_until ? "cooling" : "") : "removed";
    inFlight.textContent = m.concurrency
      ? t("assign.in_flight_value", { n: m.in_flight || 0, cap: m.concurrency })
      : String(m.in_flight || 0);
    weight.textContent = String(m.weight || 1);
    const left = m.cooling_until ? Math.max(0, Math.ceil((Date.parse(m.cooling_until) - Date.parse(st.now)) / 1000)) : 0;
    cooling.textContent = m.cooling_until ? t("assign.cooling_left", { seconds: left }) : "–";
    streak.textContent = String(m.streak || 0);
    limit.textContent = m.limit
      ? t("assign.limit_value", { rate: m.limit.rate, per: m.limit.per / 1e9, burst: m.limit.burst })
      : t("assign.no_limit");
    count.textContent = m.count.toLocaleString("en");
    const meter = bar.firstChild;
    meter.max = top;
    meter.value = m.count;
    meter.setAttribute("aria-label", `${m.member}: ${m.count}`);
    state.textContent = t(
      m.active ? (full ? "assign.state.full" : m.cooling_until ? "assign.state.cooling" : "assign.state.active") : "assign.state.removed",
    );
    const cool = action.lastChild;
    cool.textContent = t("assign.cool");
    cool.setAttribute("aria-label", t("assign.cool_label", { member: m.member, seconds: $("assign-cool-for").value }));
    cool.disabled = !st.writable || !m.active;
    const b = action.firstChild;
    b.dataset.action = m.active ? "remove" : "restore";
    b.textContent = t(m.active ? "assign.remove" : "assign.restore");
    b.setAttribute("aria-label", t(m.active ? "assign.remove_label" : "assign.restore_label", { member: m.member }));
    b.disabled = !st.writable;
    return tr;
  });
  const same = rows.length === tbody.rows.length && rows.every((tr, i) => tbody.rows[i] === tr);
  if (!same) {
    // Members came or went (a reset): keep the focused button focused.
    const focused = document.activeElement;
    tbody.replaceChildren(...rows);
    if (focused && tbody.contains(focused)) focused.focus();
  }
  drawLeases(st);
  record(st);
}

// drawLeases shows the leases open, the first to end first, each with a
// button that releases it; and the cap the members share, if they do.
function drawLeases(st) {
  const caps = new Set(st.members.map((m) => m.concurrency || 0));
  if (caps.size === 1 && document.activeElement !== $("assign-cap")) {
    const cap = String([...caps][0]);
    if ([...$("assign-cap").options].some((o) => o.value === cap)) $("assign-cap").value = cap;
  }
  const tbody = $("assign-leases").tBodies[0];
  const leases = st.leases || [];
  if (!leases.length) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = 4;
    td.textContent = t("assign.no_leases");
    tr.append(td);
    tbody.replaceChildren(tr);
    return;
  }
  // Rows are kept by lease id, as the members' are, so that a poll does
  // not replace the button under the pointer.
  const had = new Map([...tbody.rows].filter((tr) => tr.dataset.lease).map((tr) => [tr.dataset.lease, tr]));
  const rows = leases.map((l) => {
    let tr = had.get(l.id);
    if (!tr) {
      tr = document.createElement("tr");
      tr.dataset.lease = l.id;
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = l.id;
      const member = document.createElement("td");
      member.textContent = l.member;
      const ends = document.createElement("td");
      const action = document.createElement("td");
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.lease = l.id;
      b.dataset.leaseMember = l.member;
      action.append(b);
      tr.append(th, member, ends, action);
    }
    const left = Math.max(0, Math.ceil((Date.parse(l.deadline) - Date.parse(st.now)) / 1000));
    tr.cells[2].textContent = t("assign.lease_ends", { seconds: left });
    const b = tr.cells[3].firstChild;
    b.textContent = t("assign.release");
    b.setAttribute("aria-label", t("assign.release_label", { id: l.id, member: l.member }));
    b.disabled = !st.writable;
    return tr;
  });
  const same = rows.length === tbody.rows.length && rows.every((tr, i) => tbody.rows[i] === tr);
  if (!same) {
    const focused = document.activeElement;
    tbody.replaceChildren(...rows);
    if (focused && tbody.contains(focused)) focused.focus();
  }
}

// The chart's history: picks per second of each member between two
// states, and who was cooling, on Redis's clock. It starts again when the
// members change (a reset, the LLM demo).
const HISTORY = 240; // two minutes of polls
let chart = null;
let hist = { key: "", rows: [], prev: null, t0: 0 };

function record(st) {
  const names = st.members.map((m) => m.member).sort();
  const key = names.join("\n");
  const now = Date.parse(st.now);
  if (key !== hist.key) {
    hist = { key, rows: [], prev: null, t0: now };
    if (chart) chart.destroy();
    chart = names.length ? newChart(names) : null;
  }
  const prev = hist.prev;
  if (prev && now <= prev.now) return;
  const counts = new Map(st.members.map((m) => [m.member, m.count]));
  hist.prev = { now, counts };
  if (!prev || !chart) return;
  const dt = (now - prev.now) / 1000;
  const rates = new Map(names.map((n) => [n, Math.max(0, (counts.get(n) - (prev.counts.get(n) ?? 0)) / dt)]));
  const cooling = new Set(st.members.filter((m) => m.cooling_until).map((m) => m.member));
  hist.rows.push({ x: (now - hist.t0) / 1000, rates, cooling });
  if (hist.rows.length > HISTORY) hist.rows.shift();
  chart.update(hist.rows);
}

function newChart(names) {
  return new LiveChart($("assign-chart"), {
    id: "assign-picks",
    title: () => t("assign.chart.title"),
    x: { label: () => t("assign.chart.time"), format: (v) => v.toFixed(Math.abs(v) < 10 ? 1 : 0), get: (r) => r.x },
    scales: { y: { unit: () => t("assign.chart.unit"), min0: true } },
    series: names.map((n) => ({ key: n, label: () => n, digits: 0, get: (r) => r.rates.get(n) })),
    bands: names.map((n, i) => ({
      label: () => n,
      colour: `${colours[i % colours.length]}40`,
      on: (r) => r.cooling.has(n),
      lane: [i, names.length],
    })),
    state: (r) => (r.cooling.size ? `${t("assign.state.cooling")}: ${[...r.cooling].join(", ")}` : t("assign.chart.none_cooling")),
  });
}

// newRow makes a member's row; draw fills it in.
function newRow(member) {
  const tr = document.createElement("tr");
  tr.dataset.member = member;
  const th = document.createElement("th");
  th.scope = "row";
  th.textContent = member;
  const count = document.createElement("td");
  count.className = "num";
  const bar = document.createElement("td");
  const meter = document.createElement("meter");
  meter.min = 0;
  bar.append(meter);
  const state = document.createElement("td");
  const [weight, cooling, streak, limit, inFlight] = [0, 1, 2, 3, 4].map(() => document.createElement("td"));
  weight.className = "num";
  streak.className = "num";
  inFlight.className = "num";
  const action = document.createElement("td");
  const b = document.createElement("button");
  b.type = "button";
  b.dataset.member = member;
  // The cooldown button has no data-member: the remove/restore button
  // stays the row's first, as the keyboard and the tests find it.
  const cool = document.createElement("button");
  cool.type = "button";
  cool.dataset.cool = member;
  action.append(b, " ", cool);
  tr.append(th, count, bar, state, weight, cooling, streak, limit, inFlight, action);
  return tr;
}

// The page, for the registry (pages.js).
export const page = {
  id: "assign",
  heading: "assign-h",
  setup: setupAssign,
  render: renderAssign,
  relabel: relabelAssign,
  leave: leaveAssign,
};
