/**
 * The release this code is (semantic versioning; `-dev` between releases), shared by the server
 * (the cluster resource, process registrations) and the client and CLI (`kafka-log --version`).
 * The same as package.json's version and CHANGELOG.md's newest heading (test/upgrade/release.test.ts
 * checks both); a constant so the Lambda bundles carry it without package.json.
 */
export const RELEASE = '0.2.0-dev';
