import { api, enc, type Group, type GroupListing, type List } from '../api.js';
import { ErrorLine, Loading, Table } from '../components.js';
import { usePoll } from '../hooks.js';

/** A group's page: share groups have their own (SPSO/SPEO, in-flight records), the others the consumer group's. */
export const groupHref = (g: Pick<GroupListing, 'group_id' | 'type'>) =>
  `#/${g.type === 'SHARE' ? 'share-groups' : 'groups'}/${enc(g.group_id)}`;

/** Kafka's ListGroups (every type), with the consumer groups' assignor and epoch beside. */
async function loadGroups() {
  const [all, consumer] = await Promise.all([api<List<GroupListing>>('/groups'), api<List<Group>>('/consumer-groups')]);
  const details = new Map(consumer.data.map((g) => [g.consumer_group_id, g]));
  return all.data.map((g) => ({ ...g, detail: g.type === 'SHARE' ? undefined : details.get(g.group_id) }));
}

export function GroupsPage() {
  const { data, error } = usePoll(loadGroups, 3000, []);
  return (
    <>
      <h1 tabIndex={-1}>Groups</h1>
      <p>Consumer groups (classic and KIP-848 consumer protocol) and share groups (KIP-932).</p>
      <ErrorLine error={error} />
      <Loading data={data} error={error} />
      {data && (
        <Table caption="Groups" head={['Group', 'Type', 'State', 'Assignor', 'Group epoch']}>
          {data.map((g) => (
            <tr key={`${g.type}-${g.group_id}`}>
              <th scope="row">
                <a href={groupHref(g)}>{g.group_id}</a>
              </th>
              <td>{g.type}</td>
              <td>{g.state}</td>
              <td>{g.detail?.partition_assignor || '–'}</td>
              <td>{g.detail?.group_epoch ?? '–'}</td>
            </tr>
          ))}
        </Table>
      )}
      {data?.length === 0 && <p>No groups yet.</p>}
    </>
  );
}
