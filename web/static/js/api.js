// The console's JSON API (docs/api.md), as the game's pages call it.
export async function api(path, params) {
  const res = await fetch(`${path}?${params}`, { headers: { Accept: "application/json" } });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}
