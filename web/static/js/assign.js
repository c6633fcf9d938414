// The assignment lab: a least-used pool on Redis (or the in-process demo
// server, labelled as such), its counts live, picks by hand or as a steady
// load, and remove/restore under a policy (GET /api/assign, POST
// /api/assign/{create,pick,remove,restore,reset,load}). GET only reads:
// when the pool is not there the page asks POST /api/assign/create for it.
import { t } from "./i18n.js";

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
  if (!res.ok) throw new Error(answer.error || `HTTP ${res.status}`);
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
    say("assign-status", "error.api", { message: err.message });
  } finally {
    changing--;
    changed++;
  }
}

export function setupAssign() {
  $("assign-pick-1").addEventListener("click", () =>
    act("/api/assign/pick", { n: 1 }, (a) => ["assign.picked", { n: 1, member: a.picked.at(-1) }]),
  );
  $("assign-pick-100").addEventListener("click", () =>
    act("/api/assign/pick", { n: 100 }, (a) => ["assign.picked", { n: a.picked.length, member: a.picked.at(-1) }]),
  );
  $("assign-load").addEventListener("click", () => {
    const running = last && last.load.running;
    act("/api/assign/load", { rate: running ? 0 : Number($("assign-rate").value) }, () => null);
  });
  $("assign-reset").addEventListener("click", () =>
    act("/api/assign/reset", { members: 8 }, (a, st) => ["assign.reset_done", { n: st.members.length }]),
  );
  $("assign-policy").addEventListener("change", policyHelp);
  // One listener for the table's buttons, which are redrawn on every poll.
  $("assign-table").addEventListener("click", (e) => {
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
  for (const id of ["assign-pick-1", "assign-pick-100", "assign-rate", "assign-load", "assign-reset", "assign-policy"]) {
    $(id).disabled = !st.writable;
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
    const [, count, bar, state, action] = tr.cells;
    tr.className = m.active ? "" : "removed";
    count.textContent = m.count.toLocaleString("en");
    const meter = bar.firstChild;
    meter.max = top;
    meter.value = m.count;
    meter.setAttribute("aria-label", `${m.member}: ${m.count}`);
    state.textContent = t(m.active ? "assign.state.active" : "assign.state.removed");
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
  const action = document.createElement("td");
  const b = document.createElement("button");
  b.type = "button";
  b.dataset.member = member;
  action.append(b);
  tr.append(th, count, bar, state, action);
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
