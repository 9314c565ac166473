/** Small pieces every view uses: errors, times, loading data. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { MnemoError, timestampDate } from "../../src/web.js";

/** A failure as one line: code, reason and the server's message. */
export function describeError(error: unknown): string {
  if (error instanceof MnemoError) {
    return `${error.codeName}${error.reason ? ` ${error.reason}` : ""}: ${error.rawMessage}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** UTC, to the minute: "2026-12-01 21:40". */
export function formatTime(time: Timestamp | undefined): string {
  if (time === undefined) return "";
  return timestampDate(time).toISOString().slice(0, 16).replace("T", " ");
}

/** What a refusal means for the person, for the reasons the console meets (else undefined). */
const MEANINGS: Record<string, string> = {
  MEMORY_DISABLED: "Memory is switched off (Privacy & data): nothing is read or saved until it is on again.",
  MEMORY_CONSENT_WITHDRAWN: "Consent is withdrawn (Privacy & data): nothing new is remembered.",
  CANDIDATE_RESOLVED: "This candidate was already approved or rejected.",
  ETAG_MISMATCH: "It was changed elsewhere meanwhile: the list updates live, try again on the latest.",
};

export function ErrorLine({ error }: { error: unknown }): preact.JSX.Element | null {
  if (error === undefined) return null;
  const meaning = error instanceof MnemoError ? MEANINGS[error.reason] : undefined;
  return (
    <p class="error" role="alert">
      {meaning === undefined ? null : <strong class="meaning">{meaning} </strong>}
      {describeError(error)}
    </p>
  );
}

export function Card(props: { title: string; id?: string; children: ComponentChildren }): preact.JSX.Element {
  return (
    <section class="card" id={props.id}>
      <h2>{props.title}</h2>
      {props.children}
    </section>
  );
}

export interface Loaded<T> {
  value: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** `load()` run now and whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [nonce, setNonce] = useState(0);
  useEffect(() => {
    let current = true;
    setLoading(true);
    load().then(
      (result) => {
        if (!current) return;
        setValue(result);
        setError(undefined);
        setLoading(false);
      },
      (failure: unknown) => {
        if (!current) return;
        setError(failure);
        setLoading(false);
      },
    );
    return () => {
      current = false;
    };
  }, [...deps, nonce]);
  const reload = useCallback(() => setNonce((n) => n + 1), []);
  return { value, error, loading, reload };
}

/** An action's state: run it, see it running, see its failure. */
export function useAction(): {
  busy: boolean;
  error: unknown;
  run: (action: () => Promise<void>) => void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback((action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    action().then(
      () => setBusy(false),
      (failure: unknown) => {
        setError(failure);
        setBusy(false);
      },
    );
  }, []);
  return { busy, error, run };
}
