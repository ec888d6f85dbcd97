#!/usr/bin/env node
// The package's `kafka-log` bin: runs the TypeScript CLI through tsx (the project has no build step).
import { register } from 'tsx/esm/api';

process.env.KAFKA_LOG_CLI_ENTRY = '1';
register();
await import('./main.ts');
