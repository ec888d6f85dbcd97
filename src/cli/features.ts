/** `features describe|upgrade`: what kafka-features.sh does for metadata.version (docs/deploy.md). */
import { connect, int, parse, CONNECTION_HELP } from './args.js';
import type { Context } from './context.js';
import { table } from './format.js';

export const FEATURES_HELP = `Usage: kafka-log features <describe|upgrade> [options]
  describe                     the cluster's feature level, and each running process's release and level
  upgrade  --feature-level N   raise the feature level (refused while a process does not support N)
${CONNECTION_HELP}`;

export async function featuresCommand(argv: string[], ctx: Context): Promise<void> {
  const [sub, ...rest] = argv;
  const { values } = parse(rest, { 'feature-level': { type: 'string' } });
  if (values.help || sub === undefined) return ctx.out(FEATURES_HELP);
  const admin = connect(values, ctx.env).admin({ retries: 2 });
  const f =
    sub === 'upgrade'
      ? await admin.raiseFeatureLevel(int(values['feature-level'], '--feature-level', 1))
      : sub === 'describe'
        ? await admin.describeFeatures()
        : undefined;
  if (!f) return ctx.out(FEATURES_HELP);
  ctx.out(
    `FeatureLevel: ${f.featureLevel}\tSupportedFeatureLevel: ${f.supportedFeatureLevel}\tFinalizableFeatureLevel: ${f.finalizableFeatureLevel}\tRelease: ${f.release}`,
  );
  const rows = f.processes.map((p) => [p.role, p.release, p.supportedFeatureLevel, p.lastSeen]);
  for (const line of table(['Process', 'Release', 'SupportedFeatureLevel', 'LastSeen'], rows)) ctx.out(line);
}
