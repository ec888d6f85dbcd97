import { api, enc, type Group, type List } from '../api.js';
import { ErrorLine, Loading, Table } from '../components.js';
import { usePoll } from '../hooks.js';

export function GroupsPage() {
  const { data, error } = usePoll(() => api<List<Group>>('/consumer-groups'), 3000, []);
  return (
    <>
      <h1 tabIndex={-1}>Consumer groups</h1>
      <ErrorLine error={error} />
      <Loading data={data} error={error} />
      {data && (
        <Table caption="Consumer groups" head={['Group', 'State', 'Type', 'Assignor', 'Group epoch']}>
          {data.data.map((g) => (
            <tr key={g.consumer_group_id}>
              <th scope="row">
                <a href={`#/groups/${enc(g.consumer_group_id)}`}>{g.consumer_group_id}</a>
              </th>
              <td>{g.state}</td>
              <td>{g.type}</td>
              <td>{g.partition_assignor || '–'}</td>
              <td>{g.group_epoch}</td>
            </tr>
          ))}
        </Table>
      )}
      {data?.data.length === 0 && <p>No consumer groups yet.</p>}
    </>
  );
}
