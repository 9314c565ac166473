/**
 * The user's control over their memory: consent, the memory switch (each with
 * its effect stated), export as JSON Lines, and erasure with its receipt.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import { ConsentState, ExportRecordSchema, toJson, type DeleteUserDataResponse } from "../../src/web.js";
import { userParent, type Session } from "./session.js";
import { Card, ErrorLine, formatTime, useAction, useLoad } from "./ui.js";

export const CONSENT_EFFECT = {
  granted:
    "Consent granted: memory may be saved about you and recalled for the model.",
  withdrawn:
    "Consent withdrawn: every memory write is refused and recall gives the model nothing. " +
    "Your entries stay until you delete your data, and you can still see and export them.",
};
export const SWITCH_EFFECT = {
  on: "Memory is on: entries are saved, recalled and extracted from your conversations.",
  off:
    "Memory is off: nothing is read, saved or extracted, and the memory list is closed to " +
    "every client, this page included, until you switch it on again.",
};

/** Sorted keys, as `mnemo export` writes them. */
function sortedKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== "object") return value;
  const sorted: Record<string, JsonValue> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortedKeys(value[key] as JsonValue);
  return sorted;
}

function ConsentCard({ session, revision }: { session: Session; revision: number }): preact.JSX.Element {
  const name = `${userParent(session)}/consent`;
  const consent = useLoad(async () => (await session.client.governance.getConsent({ name })).consent, [name, revision]);
  const [note, setNote] = useState("");
  const action = useAction();
  const granted = consent.value?.state !== ConsentState.WITHDRAWN;
  const set = (state: ConsentState): void =>
    action.run(async () => {
      const response = await session.client.governance.setConsent({
        consent: { name, state, policyVersion: consent.value?.policyVersion ?? "" },
      });
      setNote(
        response.cancelledCandidates > 0 ? `${response.cancelledCandidates} pending candidates were cancelled.` : "",
      );
      consent.reload();
    });
  return (
    <Card title="Consent" id="consent">
      <ErrorLine error={consent.error ?? action.error} />
      {consent.value === undefined ? null : (
        <>
          <p class={granted ? "effect on" : "effect off"} id="consent-effect" data-state={granted ? "granted" : "withdrawn"}>
            {granted ? CONSENT_EFFECT.granted : CONSENT_EFFECT.withdrawn}
          </p>
          {note ? <p class="hint">{note}</p> : null}
          <button
            id="consent-toggle"
            class={granted ? "danger" : "primary"}
            disabled={action.busy}
            onClick={() => set(granted ? ConsentState.WITHDRAWN : ConsentState.GRANTED)}
          >
            {granted ? "Withdraw consent" : "Grant consent"}
          </button>
          <span class="hint"> Last changed {formatTime(consent.value.updateTime) || "never"}</span>
        </>
      )}
    </Card>
  );
}

function SwitchCard({ session, revision }: { session: Session; revision: number }): preact.JSX.Element {
  const name = `${userParent(session)}/memorySettings`;
  const settings = useLoad(
    async () => (await session.client.governance.getMemorySettings({ name })).memorySettings,
    [name, revision],
  );
  const action = useAction();
  const enabled = settings.value?.enabled ?? true;
  const toggle = (): void =>
    action.run(async () => {
      await session.client.governance.updateMemorySettings({ memorySettings: { name, enabled: !enabled } });
      settings.reload();
    });
  return (
    <Card title="Memory switch" id="memory-switch">
      <ErrorLine error={settings.error ?? action.error} />
      {settings.value === undefined ? null : (
        <>
          <p class={enabled ? "effect on" : "effect off"} id="switch-effect" data-enabled={String(enabled)}>
            {enabled ? SWITCH_EFFECT.on : SWITCH_EFFECT.off}
          </p>
          <label class="switch">
            <input id="memory-switch-toggle" type="checkbox" role="switch" checked={enabled} disabled={action.busy} onChange={toggle} />
            Memory {enabled ? "on" : "off"}
          </label>
        </>
      )}
    </Card>
  );
}

function ExportCard({ session }: { session: Session }): preact.JSX.Element {
  const [done, setDone] = useState("");
  const action = useAction();
  const download = (): void =>
    action.run(async () => {
      const lines: string[] = [];
      for await (const response of session.client.governance.exportUserData({ parent: userParent(session) })) {
        if (response.record === undefined) continue;
        lines.push(JSON.stringify(sortedKeys(toJson(ExportRecordSchema, response.record))));
      }
      const blob = new Blob(lines.map((line) => `${line}\n`), { type: "application/jsonl" });
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = `mnemo-export-${session.user}.jsonl`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
      setDone(`Exported ${lines.length} records.`);
    });
  return (
    <Card title="Export" id="export">
      <p class="hint">
        Everything stored for you, one record per line (JSON Lines, as <code>mnemo export</code>{" "}
        writes it; <code>mnemo import</code> loads it).
      </p>
      <button id="export-button" class="primary" disabled={action.busy} onClick={download}>
        Download my data (.jsonl)
      </button>{" "}
      <span id="export-done">{done}</span>
      <ErrorLine error={action.error} />
    </Card>
  );
}

function Receipt({ receipt }: { receipt: DeleteUserDataResponse }): preact.JSX.Element {
  const all = Object.entries(receipt.deletedRows).sort(([a], [b]) => a.localeCompare(b));
  const total = all.reduce((sum, [, count]) => sum + count, 0n);
  const rows = all.filter(([, count]) => count > 0n);
  const untouched = all.filter(([, count]) => count === 0n).map(([table]) => table);
  const kept = Object.entries(receipt.retainedRows);
  return (
    <div class="receipt" id="receipt" data-total={String(total)}>
      <h3>Receipt</h3>
      <p>
        Erased {String(total)} rows at {formatTime(receipt.deleteTime)} UTC.
        {kept.length > 0 ? " Your consent decision and memory switch were kept, so they stay in force." : ""}
      </p>
      <table class="receipt-rows">
        <thead>
          <tr>
            <th>Table</th>
            <th>Rows erased</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([table, count]) => (
            <tr data-table={table} data-count={String(count)}>
              <td>
                <code>{table}</code>
              </td>
              <td class="count">{String(count)}</td>
            </tr>
          ))}
          {kept.map(([table, count]) => (
            <tr class="kept" data-table={table}>
              <td>
                <code>{table}</code> (kept)
              </td>
              <td class="count">{String(count)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {untouched.length > 0 ? <p class="hint">Nothing stored in: {untouched.join(", ")}.</p> : null}
    </div>
  );
}

function DeleteCard({ session }: { session: Session }): preact.JSX.Element {
  const [confirming, setConfirming] = useState(false);
  const [receipt, setReceipt] = useState<DeleteUserDataResponse | undefined>(undefined);
  const action = useAction();
  const erase = (): void =>
    action.run(async () => {
      setReceipt(await session.client.governance.deleteUserData({ parent: userParent(session) }));
      setConfirming(false);
    });
  return (
    <Card title="Delete my data" id="delete-data">
      <p class="hint">
        Erases every memory, conversation, working memory, candidate and event stored for you, in
        every table. It cannot be undone.
      </p>
      {confirming ? (
        <>
          <button id="delete-confirm" class="danger" disabled={action.busy} onClick={erase}>
            Yes, erase everything
          </button>{" "}
          <button onClick={() => setConfirming(false)}>Cancel</button>
        </>
      ) : (
        <button id="delete-button" class="danger" onClick={() => setConfirming(true)}>
          Delete my data…
        </button>
      )}
      <ErrorLine error={action.error} />
      {receipt === undefined ? null : <Receipt receipt={receipt} />}
    </Card>
  );
}

export function PrivacyView({ session, revision }: { session: Session; revision: number }): preact.JSX.Element {
  return (
    <div class="grid">
      <ConsentCard session={session} revision={revision} />
      <SwitchCard session={session} revision={revision} />
      <ExportCard session={session} />
      <DeleteCard session={session} />
    </div>
  );
}
