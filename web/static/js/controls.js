// The player's eight levers: built from GET /api/scenarios, each move
// queued for the start of the next minute.
import { t } from "./i18n.js";
import { $, state, clockOf, announce } from "./state.js";
import { invalidateFrom, hooks } from "./playback.js";

// Controls are shown in the units people think in: percentages for the
// target and shedding, seconds for the TTL.
export const displayScale = { target_utilization: 100, shed_low_priority: 100 };
export const displayUnit = { fleet_floor: "", target_utilization: "%", cache_ttl_s: "s", shed_low_priority: "%" };

// act queues a move for the next minute: the dashboard shows minute m, so
// the player's answer to it takes effect at the start of m+1.
export function act(control, value) {
  const minute = state.shown + 1;
  if (minute >= state.scenario.minutes || state.over || state.watching) return;
  hooks.beforeAct();
  state.actions = state.actions.filter((a) => !(a.minute === minute && a.control === control));
  state.actions.push(value === undefined ? { minute, control } : { minute, control, value });
  state.actions.sort((a, b) => a.minute - b.minute);
  invalidateFrom(minute);
  announce(t("control.queued", { label: t(`control.${control}.label`), clock: clockOf(minute) }));
  syncControls();
}

// checks holds each numeric lever's check of what is typed, which shows
// or clears its message.
const checks = new Map();

export function pending(control) {
  return state.actions.find((a) => a.control === control && a.minute > state.shown);
}

// leverHelp shows the help of the lever under the pointer or with focus,
// or the general note, in the line above the levers.
function leverHelp(id) {
  $("lever-help").textContent = id ? t(`control.${id}.help`) : t("controls.help");
}

export function buildControls() {
  const root = $("controls");
  root.replaceChildren();
  leverHelp();
  if (!root.dataset.wired) {
    root.dataset.wired = "1";
    const at = (e) => e.target.closest?.(".control")?.dataset.control;
    root.addEventListener("focusin", (e) => leverHelp(at(e)));
    root.addEventListener("mouseover", (e) => leverHelp(at(e) || root.contains(document.activeElement) && document.activeElement.closest(".control")?.dataset.control));
    root.addEventListener("mouseleave", () => leverHelp(root.contains(document.activeElement) ? document.activeElement.closest(".control")?.dataset.control : undefined));
    root.addEventListener("focusout", (e) => {
      if (!root.contains(e.relatedTarget)) leverHelp();
    });
  }
  for (const spec of state.info.controls) {
    const id = spec.control;
    const box = document.createElement("div");
    box.className = "control";
    box.dataset.control = id;
    const head = document.createElement("div");
    head.className = "head";
    const help = document.createElement("p");
    help.className = "help";
    help.id = `help-${id}`;
    help.textContent = t(`control.${id}.help`);
    const note = document.createElement("span");
    note.className = "pending";
    note.id = `pending-${id}`;
    const errorLine = document.createElement("p");
    errorLine.className = "field-error";
    errorLine.id = `error-${id}`;
    errorLine.setAttribute("role", "status");

    if (spec.kind === "press") {
      const button = document.createElement("button");
      button.type = "button";
      button.id = `control-${id}`;
      button.textContent = t(`control.${id}.press`);
      button.setAttribute("aria-describedby", help.id);
      button.addEventListener("click", () => act(id));
      const running = document.createElement("span");
      running.className = "running";
      running.id = `running-${id}`;
      head.append(button, running, note);
      box.append(head, help);
    } else if (spec.kind === "bool") {
      const input = document.createElement("input");
      input.type = "checkbox";
      input.id = `control-${id}`;
      input.setAttribute("aria-describedby", help.id);
      input.addEventListener("change", () => act(id, input.checked));
      const label = document.createElement("label");
      label.htmlFor = input.id;
      label.textContent = t(`control.${id}.label`);
      head.append(input, label, note);
      box.append(head, help);
    } else {
      const scale = displayScale[id] || 1;
      const label = document.createElement("label");
      label.htmlFor = `control-${id}`;
      label.textContent = t(`control.${id}.label`);
      const input = document.createElement("input");
      input.type = "number";
      input.id = `control-${id}`;
      input.min = String(spec.min * scale);
      input.max = String(spec.max * scale);
      input.step = spec.kind === "integer" ? "1" : "any";
      input.setAttribute("aria-describedby", `${help.id} ${errorLine.id}`);
      const unit = document.createElement("span");
      unit.className = "unit";
      unit.textContent = displayUnit[id] || "";
      // valid reads what is typed, in the units shown, against the range
      // the API gives; it returns the value in the model's units.
      const valid = () => {
        const shown = Number(input.value);
        const value = shown / scale;
        const ok =
          input.value.trim() !== "" &&
          Number.isFinite(shown) &&
          value >= spec.min - 1e-12 &&
          value <= spec.max + 1e-12 &&
          (spec.kind !== "integer" || Number.isInteger(shown));
        return ok ? Math.min(spec.max, Math.max(spec.min, value)) : undefined;
      };
      const clear = () => {
        errorLine.textContent = "";
        input.removeAttribute("aria-invalid");
      };
      // The message goes as soon as what is typed is valid.
      input.addEventListener("input", () => {
        if (valid() !== undefined) clear();
      });
      // report says what is wrong with what is typed, or clears the
      // message; it returns the value when it is valid.
      const report = () => {
        const value = valid();
        if (value === undefined) {
          errorLine.textContent = t("control.error.range", {
            label: t(`control.${id}.label`),
            min: +(spec.min * scale).toFixed(4),
            max: +(spec.max * scale).toFixed(4),
          });
          input.setAttribute("aria-invalid", "true");
          return undefined;
        }
        clear();
        return value;
      };
      checks.set(id, report);
      input.addEventListener("change", () => {
        const value = report();
        if (value !== undefined) act(id, value);
      });
      head.append(label, input, unit, note);
      box.append(head, help, errorLine);
    }
    root.append(box);
  }
}

// syncControls shows each lever's position: the pending value if the
// player has just moved it, else the minute's.
export function syncControls() {
  const f = state.frames[state.shown];
  if (!f) return;
  // Levers are off once the game is over, while a shared run plays back
  // (its levers are the run's own), and while a drill is followed (the
  // team pulls them, with afloat drill lever).
  const locked = state.over || state.watching || state.drill;
  for (const spec of state.info.controls) {
    const id = spec.control;
    const el = $(`control-${id}`);
    const p = pending(id);
    el.disabled = locked;
    $(`pending-${id}`).textContent = p ? t("pending", { clock: clockOf(p.minute) }) : "";
    if (spec.kind === "press") {
      const left = id === "warmup" ? f.warmup_minutes_left : f.rollback_minutes_left;
      $(`running-${id}`).textContent = left > 0 ? t(`control.${id}.running`, { minutes: left }) : "";
      el.disabled = locked || (id === "warmup" && left > 0 && !p);
      continue;
    }
    if (document.activeElement === el) continue;
    const value = p ? p.value : f[id];
    if (spec.kind === "bool") {
      el.checked = !!value;
      continue;
    }
    // The field shows the lever's position again, so whatever was typed
    // there, and its message, goes: the value shown is valid however it
    // got there (a step of the game, another lever taking the run over).
    const shown = String(+(value * (displayScale[id] || 1)).toFixed(4));
    el.value = shown;
    el.dataset.shown = shown;
    $(`error-${id}`).textContent = "";
    el.removeAttribute("aria-invalid");
  }
}

// typedValues returns what the player typed into the numeric levers and
// has not had taken (an invalid value, or one not yet committed), so that
// rebuilding the levers in another language keeps it.
export function typedValues() {
  const out = new Map();
  for (const id of checks.keys()) {
    const el = $(`control-${id}`);
    if (el && el.dataset.shown !== undefined && el.value !== el.dataset.shown) out.set(id, el.value);
  }
  return out;
}

// restoreTyped puts typed values back into the rebuilt levers, with their
// message in the new language.
export function restoreTyped(typed) {
  for (const [id, value] of typed) {
    const el = $(`control-${id}`);
    if (!el || el.disabled) continue;
    el.value = value;
    checks.get(id)?.();
  }
}
