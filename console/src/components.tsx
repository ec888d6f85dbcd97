import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { ApiError } from './api.js';

/** While a page's first load is under way: a line that says so (to screen readers too). */
export function Loading({ data, error }: { data: unknown; error: unknown }) {
  if (data !== undefined || error) return null;
  return (
    <p class="loading" role="status" aria-busy="true">
      Loading…
    </p>
  );
}

export function ErrorLine({ error }: { error: Error | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error instanceof ApiError ? (
        <>
          <strong>{error.errorName}</strong>: {error.message}
        </>
      ) : (
        error.message
      )}
    </p>
  );
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section aria-labelledby={id ? `${id}-h` : undefined}>
      <h2 id={id ? `${id}-h` : undefined}>{title}</h2>
      {children}
    </section>
  );
}

/** A form that stays on the page: submitting runs `onSubmit` instead of navigating. */
export function Form({
  class: className,
  onSubmit,
  children,
}: {
  class: string;
  onSubmit: () => unknown;
  children: ComponentChildren;
}) {
  return (
    <form
      class={className}
      onSubmit={(e) => {
        e.preventDefault();
        void onSubmit();
      }}
    >
      {children}
    </form>
  );
}

/** A labelled choice of a topic's partitions; `any` names a first option with the value ''. */
export function PartitionSelect({
  partitions,
  value,
  onChange,
  any,
}: {
  partitions: number;
  value: string | number;
  onChange: (value: string) => void;
  any?: string;
}) {
  return (
    <label>
      Partition
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {any !== undefined && <option value="">{any}</option>}
        {Array.from({ length: partitions }, (_, p) => (
          <option value={p} key={p}>
            {p}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A table that scrolls sideways on its own on a narrow screen, instead of the whole page. */
export function Table({ caption, head, children }: { caption: string; head: string[]; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must take keyboard focus to be scrolled without a mouse
    // biome-ignore lint/a11y/useSemanticElements: a div keeps the table's own layout; the role names the scroll region
    <div class="table-wrap" tabIndex={0} role="region" aria-label={caption}>
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th scope="col" key={h}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

export function Stat({ label, value }: { label: string; value: string | number }) {
  return (
    <div class="stat">
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

/** A uPlot line chart of one series; `label` names it for screen readers and in the legend. */
export function LineChart({ label, data, unit }: { label: string; data: [number[], number[]]; unit: string }) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  useEffect(() => {
    const el = host.current!;
    const width = () => Math.max(240, Math.min(el.clientWidth || 600, 900));
    plot.current = new uPlot(
      {
        width: width(),
        height: 180,
        series: [{}, { label: `${label} (${unit})`, stroke: '#0b5cad', width: 2, fill: 'rgba(11,92,173,0.08)' }],
        axes: [
          // Time labels ("10:41:20pm") are about 70 px wide: closer ticks overlapped on narrow screens.
          { space: 90 },
          // Wide enough for the longest tick label, so large counts are not clipped.
          { size: (_u, values) => 16 + 8 * Math.max(3, ...(values ?? []).map((v) => v.length)) },
        ],
        legend: { show: false },
        // A sliding two-minute window ending at the last sample, and a y axis from 0: one sample is
        // not a scale. The window is taken from the data, not from `max`: with a single sample
        // uPlot widens a time scale's max by 86,400,000 of its units (1,000 days in seconds).
        scales: {
          x: {
            time: true,
            range: (u, _min, max) => {
              const end = u.data[0].at(-1) ?? max;
              return [end - 120, end];
            },
          },
          y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
        },
      },
      [[], []],
      el,
    );
    const onResize = () => plot.current?.setSize({ width: width(), height: 180 });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      plot.current?.destroy();
    };
  }, [label, unit]);
  useEffect(() => plot.current?.setData(data), [data]);
  const last = data[1].at(-1);
  return (
    <figure class="chart">
      <div ref={host} role="img" aria-label={`${label} over time; latest ${last ?? 'no'} ${unit}`} />
      <figcaption>
        {label}: <output data-testid={`${label}-latest`}>{last ?? '–'}</output> {unit}
      </figcaption>
    </figure>
  );
}

/**
 * A button whose action is asked about first: a click shows `question` with "confirm" and Cancel
 * in its place (focus moves to the question's button), and only "confirm" runs `onConfirm`.
 */
export function ConfirmButton({
  label,
  question,
  confirm,
  onConfirm,
}: {
  label: string;
  question: string;
  confirm: string;
  onConfirm: () => unknown;
}) {
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
  }, [asking]);
  if (!asking)
    return (
      <button type="button" onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  return (
    // biome-ignore lint/a11y/useSemanticElements: a group of two buttons and their question, not a form's fieldset
    <div class="confirm" role="group" aria-label={question}>
      <p>{question}</p>
      <button
        type="button"
        class="danger"
        ref={yes}
        onClick={() => {
          setAsking(false);
          void onConfirm();
        }}
      >
        {confirm}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </div>
  );
}
