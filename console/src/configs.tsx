import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorLine, Form } from './components.js';

/** A config as the topic and share group config lists give it. */
export interface ConfigEntry {
  name: string;
  value: string | null;
  is_default: boolean;
  is_read_only?: boolean;
  source: string;
}

/**
 * One editable config: Save sets the typed value, Reset (shown when not the default) removes it;
 * `save(undefined)` is the removal. The server's error shows under the field, by its Kafka name.
 */
export function ConfigRow({
  config,
  save,
  onSaved,
}: {
  config: ConfigEntry;
  save: (value: string | undefined) => Promise<unknown>;
  onSaved: () => void;
}) {
  const [value, setValue] = useState(config.value ?? '');
  const [error, setError] = useState<Error>();
  const [saved, setSaved] = useState('');
  // A new value from the server replaces the field's; the first render's is already in it. The
  // effect runs after paint: run at mount too, it would undo what was typed in the meantime.
  const shown = useRef(config.value);
  useEffect(() => {
    if (shown.current === config.value) return;
    shown.current = config.value;
    setValue(config.value ?? '');
  }, [config.value]);
  const alter = async (operation: 'SET' | 'DELETE') => {
    setError(undefined);
    setSaved('');
    try {
      await save(operation === 'SET' ? value : undefined);
      setSaved(operation === 'SET' ? 'Saved' : 'Reset to default');
      onSaved();
    } catch (e) {
      setError(e as Error);
    }
  };
  const id = `config-${config.name.replace(/\W/g, '-')}`;
  return (
    <tr>
      <th scope="row">
        <label for={id}>{config.name}</label>
      </th>
      <td>
        <Form class="inline" onSubmit={() => alter('SET')}>
          <input
            id={id}
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
            readOnly={config.is_read_only}
            aria-describedby={`${id}-status`}
          />
          <button type="submit" disabled={config.is_read_only || value === (config.value ?? '')}>
            Save
          </button>
          {!config.is_default && (
            <button type="button" onClick={() => void alter('DELETE')}>
              Reset
            </button>
          )}
        </Form>
        <div id={`${id}-status`} aria-live="polite">
          {saved && <span class="ok">{saved}</span>}
          <ErrorLine error={error} />
        </div>
      </td>
      <td>{config.is_default ? 'default' : config.source}</td>
    </tr>
  );
}
