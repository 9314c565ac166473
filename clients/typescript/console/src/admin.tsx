/**
 * A tenant's analytics events over time (ListEvents of `tenants/{tenant}`,
 * which needs the admin role of that tenant), as a stacked bar chart: one bar
 * per hour (per day past three days), one colour per event type.
 */
import { useState } from "preact/hooks";
import { EventType, timestampDate, type Event } from "../../src/web.js";
import type { Session } from "./session.js";
import { Card, ErrorLine, useLoad } from "./ui.js";

const MAX_EVENTS = 10_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export const EVENT_TYPES: readonly { type: EventType; label: string; colour: string }[] = [
  { type: EventType.MEMORY_SAVED, label: "memory_saved", colour: "#2f6fde" },
  { type: EventType.MEMORY_RECALLED, label: "memory_recalled", colour: "#2aa876" },
  { type: EventType.MEMORY_DELETED, label: "memory_deleted", colour: "#d9534f" },
  { type: EventType.MEMORY_CLEARED, label: "memory_cleared", colour: "#8e44ad" },
  { type: EventType.MEMORY_EXTRACTION_PROPOSED, label: "memory_extraction_proposed", colour: "#f0a202" },
  { type: EventType.MEMORY_EXTRACTION_RESOLVED, label: "memory_extraction_resolved", colour: "#b8860b" },
  { type: EventType.MEMORY_CONSENT_CHANGED, label: "memory_consent_changed", colour: "#5d6d7e" },
];

async function tenantEvents(session: Session, tenant: string): Promise<Event[]> {
  const found: Event[] = [];
  let pageToken = "";
  do {
    const page = await session.client.governance.listEvents({ parent: `tenants/${tenant}`, pageSize: 500, pageToken });
    found.push(...page.events);
    pageToken = page.nextPageToken;
  } while (pageToken !== "" && found.length < MAX_EVENTS);
  return found;
}

export interface Bucket {
  start: number;
  counts: Map<EventType, number>;
}

/** Events counted per time bucket (every bucket from the first to the last) and type. */
export function bucketed(events: readonly Event[]): { size: number; buckets: Bucket[] } {
  const times = events.map((event) => (event.createTime ? timestampDate(event.createTime).getTime() : 0));
  if (times.length === 0) return { size: HOUR_MS, buckets: [] };
  const first = Math.min(...times);
  const last = Math.max(...times);
  const size = last - first > 3 * DAY_MS ? DAY_MS : HOUR_MS;
  const start = Math.floor(first / size) * size;
  const buckets: Bucket[] = [];
  for (let at = start; at <= last; at += size) buckets.push({ start: at, counts: new Map() });
  events.forEach((event, i) => {
    const bucket = buckets[Math.floor(((times[i] ?? 0) - start) / size)];
    if (bucket !== undefined) bucket.counts.set(event.type, (bucket.counts.get(event.type) ?? 0) + 1);
  });
  return { size, buckets };
}

/** 1, 2 or 5 times a power of ten, at least `rough` (the grid's step). */
function niceStep(rough: number): number {
  const power = 10 ** Math.floor(Math.log10(Math.max(rough, 1)));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= rough) ?? 10 * power;
}

function label(start: number, size: number): string {
  const iso = new Date(start).toISOString();
  return size === DAY_MS ? iso.slice(5, 10) : `${iso.slice(5, 10)} ${iso.slice(11, 13)}h`;
}

function Chart({ events }: { events: readonly Event[] }): preact.JSX.Element {
  const { size, buckets } = bucketed(events);
  const height = 220;
  const top = 16;
  const left = 40;
  const barWidth = Math.max(8, Math.min(64, Math.floor(960 / Math.max(buckets.length, 1)) - 6));
  const width = left + buckets.length * (barWidth + 6) + 10;
  const highest = Math.max(1, ...buckets.map((bucket) => [...bucket.counts.values()].reduce((a, b) => a + b, 0)));
  const step = niceStep(highest / 4);
  const peak = Math.ceil(highest / step) * step;
  const scale = (height - top) / peak;
  const ticks = Array.from({ length: peak / step + 1 }, (_, i) => i * step);
  return (
    <svg
      id="events-chart"
      class="chart"
      width={Math.max(width, 320)}
      height={height + 40}
      viewBox={`0 0 ${Math.max(width, 320)} ${height + 40}`}
      role="img"
      aria-label="Events per time bucket by type"
    >
      {ticks.map((tick) => (
        <g>
          <line x1={left - 4} x2={width} y1={height - tick * scale} y2={height - tick * scale} class="grid-line" />
          <text x={left - 8} y={height - tick * scale + 4} class="axis" text-anchor="end">
            {tick}
          </text>
        </g>
      ))}
      {buckets.map((bucket, i) => {
        const x = left + i * (barWidth + 6);
        let y = height;
        return (
          <g class="bucket" data-start={new Date(bucket.start).toISOString()}>
            {EVENT_TYPES.map(({ type, label: name, colour }) => {
              const count = bucket.counts.get(type) ?? 0;
              if (count === 0) return null;
              y -= count * scale;
              return (
                <rect class="bar" x={x} y={y} width={barWidth} height={count * scale} fill={colour} data-type={name} data-count={count}>
                  <title>{`${name}: ${count}`}</title>
                </rect>
              );
            })}
            {i % Math.ceil(buckets.length / 8) === 0 ? (
              <text x={x + barWidth / 2} y={height + 16} class="axis" text-anchor="middle">
                {label(bucket.start, size)}
              </text>
            ) : null}
          </g>
        );
      })}
      <text x={left} y={height + 34} class="axis">
        {size === DAY_MS ? "per day (UTC)" : "per hour (UTC)"}
      </text>
    </svg>
  );
}

export function AdminView({ session }: { session: Session }): preact.JSX.Element {
  const [tenant, setTenant] = useState(session.tenant || "-");
  const [shown, setShown] = useState(tenant);
  const events = useLoad(() => tenantEvents(session, shown), [session, shown]);
  const totals = new Map<EventType, number>();
  for (const event of events.value ?? []) totals.set(event.type, (totals.get(event.type) ?? 0) + 1);
  return (
    <Card title="Tenant analytics" id="admin">
      <p class="hint">
        The memory events of every user of a tenant, over time. Needs a token with the admin role of
        that tenant (<code>-</code> is the users without a tenant).
      </p>
      <form
        class="row-form"
        onSubmit={(e) => {
          e.preventDefault();
          setShown(tenant.trim());
        }}
      >
        <input id="tenant" class="narrow" value={tenant} onInput={(e) => setTenant(e.currentTarget.value)} />
        <button id="tenant-load" type="submit" class="primary">
          Show
        </button>
      </form>
      <ErrorLine error={events.error} />
      {events.value === undefined ? null : (
        <div class="chart-wrap" data-total={events.value.length} data-tenant={shown}>
          <Chart events={events.value} />
          <ul class="legend">
            {EVENT_TYPES.map(({ type, label: name, colour }) => (
              <li data-type={name} data-count={totals.get(type) ?? 0}>
                <span class="swatch" style={{ background: colour }} />
                {name} <strong>{totals.get(type) ?? 0}</strong>
              </li>
            ))}
          </ul>
          <p class="hint">
            {events.value.length} events{events.value.length >= MAX_EVENTS ? ` (the newest ${MAX_EVENTS})` : ""}.
          </p>
        </div>
      )}
    </Card>
  );
}
