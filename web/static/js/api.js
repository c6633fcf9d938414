// The console's JSON API (docs/api.md), as the game's pages call it.
export async function api(path, params) {
  const res = await fetch(`${path}?${params}`, { headers: { Accept: "application/json" } });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}

// post sends a JSON body (the only kind of POST the console takes). A 503
// with Retry-After — the console computes as much as it allows — is
// retried as told, a few times. signal cancels it (the server then stops
// a computation nobody else waits for).
export async function post(path, body, signal) {
  for (let busy = 0; ; busy++) {
    const res = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
      signal,
    });
    const answer = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
    const after = Number(res.headers.get("Retry-After"));
    if (res.status === 503 && after > 0 && busy < 10) {
      await new Promise((done) => setTimeout(done, 1000 * after));
      continue;
    }
    if (!res.ok) throw new Error(answer.error || `HTTP ${res.status}`);
    return answer;
  }
}
