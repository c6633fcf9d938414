// The player's eight levers: built from GET /api/scenarios, each move
// queued for the start of the next minute.
import { t } from "./i18n.js";
import { $, state, clockOf, announce } from "./state.js";
import { invalidateFrom } from "./playback.js";

// Controls are shown in the units people think in: percentages for the
// target and shedding, seconds for the TTL.
export const displayScale = { target_utilization: 100, shed_low_priority: 100 };
export const displayUnit = { fleet_floor: "", target_utilization: "%", cache_ttl_s: "s", shed_low_priority: "%" };

// act queues a move for the next minute: the dashboard shows minute m, so
// the player's answer to it takes effect at the start of m+1.
export function act(control, value) {
  const minute = state.shown + 1;
  if (minute >= state.scenario.minutes) return;
  state.actions = state.actions.filter((a) => !(a.minute === minute && a.control === control));
  state.actions.push(value === undefined ? { minute, control } : { minute, control, value });
  state.actions.sort((a, b) => a.minute - b.minute);
  invalidateFrom(minute);
  announce(t("control.queued", { label: t(`control.${control}.label`), clock: clockOf(minute) }));
  syncControls();
}

function pending(control) {
  return state.actions.find((a) => a.control === control && a.minute > state.shown);
}

export function buildControls() {
  const root = $("controls");
  root.replaceChildren();
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
      input.addEventListener("change", () => {
        const shown = Number(input.value);
        const value = shown / scale;
        const ok =
          input.value.trim() !== "" &&
          Number.isFinite(shown) &&
          value >= spec.min - 1e-12 &&
          value <= spec.max + 1e-12 &&
          (spec.kind !== "integer" || Number.isInteger(shown));
        if (!ok) {
          errorLine.textContent = t("control.error.range", {
            label: t(`control.${id}.label`),
            min: spec.min * scale,
            max: spec.max * scale,
          });
          input.setAttribute("aria-invalid", "true");
          return;
        }
        errorLine.textContent = "";
        input.removeAttribute("aria-invalid");
        act(id, Math.min(spec.max, Math.max(spec.min, value)));
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
  for (const spec of state.info.controls) {
    const id = spec.control;
    const el = $(`control-${id}`);
    const p = pending(id);
    $(`pending-${id}`).textContent = p ? t("pending", { clock: clockOf(p.minute) }) : "";
    if (spec.kind === "press") {
      const left = id === "warmup" ? f.warmup_minutes_left : f.rollback_minutes_left;
      $(`running-${id}`).textContent = left > 0 ? t(`control.${id}.running`, { minutes: left }) : "";
      el.disabled = id === "warmup" && left > 0 && !p;
      continue;
    }
    if (document.activeElement === el) continue;
    const value = p ? p.value : f[id];
    if (spec.kind === "bool") el.checked = !!value;
    else el.value = String(+(value * (displayScale[id] || 1)).toFixed(4));
  }
}
