/**
 * The replica stores: standard S3 buckets and, optionally, one S3 Express One Zone directory
 * bucket per availability zone. Their order is the replica-id order the functions receive in
 * BUCKETS (replica j of partition i lives on store (i + j) mod n, docs/architecture.md).
 *
 * Standard buckets: no public access, SSE-S3, TLS (1.2+) required by the bucket policy, bucket
 * owner owns every object, incomplete multipart uploads aborted after a day. Objects are immutable
 * and deleted by retention, so versioning would only keep deleted data around: it is off.
 */
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3express from 'aws-cdk-lib/aws-s3express';
import { Construct } from 'constructs';
import { expressSessionMode, type DataAccess } from './data-access.js';

/** The request metrics filter of each standard bucket: the whole bucket (CloudWatch's FilterId dimension). */
export const REQUEST_METRICS_FILTER_ID = 'EntireBucket';

export interface ReplicaStoresProps {
  standardBuckets: number;
  expressOneZoneAzIds: string[];
  retainData: boolean;
}

export class ReplicaStores extends Construct {
  readonly buckets: s3.Bucket[];
  readonly directoryBuckets: s3express.CfnDirectoryBucket[];
  /** Every store's bucket name, in replica-id order. */
  readonly bucketNames: string[];

  constructor(scope: Construct, id: string, props: ReplicaStoresProps) {
    super(scope, id);
    const removalPolicy = props.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.buckets = Array.from({ length: props.standardBuckets }, (_, i) => {
      const bucket = new s3.Bucket(this, `Store${i}`, {
        blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
        encryption: s3.BucketEncryption.S3_MANAGED,
        enforceSSL: true,
        minimumTLSVersion: 1.2,
        objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned: false,
        lifecycleRules: [
          { id: 'abort-incomplete-multipart-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        ],
        removalPolicy,
        // CloudWatch request metrics (5xxErrors, SlowDown among them), which infra/monitoring.ts alarms on.
        metrics: [{ id: REQUEST_METRICS_FILTER_ID }],
        // Without this a non-empty bucket fails the stack deletion that retainData=false asks for.
        autoDeleteObjects: !props.retainData,
      });
      Validations.of(bucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason:
          'Server access logs would write a log object for every produce and fetch request, roughly doubling the request cost of ' +
          "the log itself; API access logs (with caller identity and request id) and the functions' JSON logs cover who did what.",
      });
      return bucket;
    });

    this.directoryBuckets = props.expressOneZoneAzIds.map((azId) => {
      const bucket = new s3express.CfnDirectoryBucket(this, `ExpressStore-${azId}`, {
        dataRedundancy: 'SingleAvailabilityZone',
        locationName: azId,
        bucketEncryption: {
          serverSideEncryptionConfiguration: [{ serverSideEncryptionByDefault: { sseAlgorithm: 'AES256' } }],
        },
        lifecycleConfiguration: {
          rules: [
            {
              id: 'abort-incomplete-multipart-uploads',
              status: 'Enabled',
              abortIncompleteMultipartUpload: { daysAfterInitiation: 1 },
            },
          ],
        },
      });
      // Directory buckets always block public access; CloudFormation cannot empty them, so with
      // retainData=false the stack deletion needs them emptied first (docs/deploy.md).
      bucket.applyRemovalPolicy(removalPolicy);
      // TLS only, as the standard buckets' enforceSSL: every data call needs a session, so
      // refusing CreateSession over plain HTTP refuses them all.
      new s3express.CfnBucketPolicy(this, `ExpressStoreTls-${azId}`, {
        bucket: bucket.ref,
        policyDocument: {
          Version: '2012-10-17',
          Statement: [
            {
              Sid: 'TlsOnly',
              Effect: 'Deny',
              Principal: '*',
              Action: 's3express:CreateSession',
              Resource: bucket.attrArn,
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            },
          ],
        },
      });
      return bucket;
    });

    this.bucketNames = [...this.buckets.map((b) => b.bucketName), ...this.directoryBuckets.map((b) => b.ref)];
  }

  /**
   * Grants a function exactly `access` on these stores: object actions on `bucket/*`, bucket
   * actions on the bucket. Directory buckets authorize data calls through a session, so there the
   * grant is s3express:CreateSession on the bucket: read-only sessions for a function that only
   * reads (which asks for them: S3_EXPRESS_SESSION_MODE, set by the stack), read-write for the
   * others. None for a function without S3 actions.
   */
  grant(grantee: iam.IGrantable, access: DataAccess): void {
    const statements: iam.PolicyStatement[] = [];
    if (this.buckets.length > 0 && access.objectActions.length > 0) {
      statements.push(
        new iam.PolicyStatement({
          actions: [...access.objectActions],
          resources: this.buckets.map((b) => b.arnForObjects('*')),
        }),
      );
    }
    if (this.buckets.length > 0 && access.bucketActions.length > 0) {
      statements.push(
        new iam.PolicyStatement({
          actions: [...access.bucketActions],
          resources: this.buckets.map((b) => b.bucketArn),
        }),
      );
    }
    if (this.directoryBuckets.length > 0 && access.objectActions.length + access.bucketActions.length > 0) {
      const readOnly = expressSessionMode(access) === 'ReadOnly';
      statements.push(
        new iam.PolicyStatement({
          actions: ['s3express:CreateSession'],
          resources: this.directoryBuckets.map((b) => b.attrArn),
          ...(readOnly && { conditions: { StringEquals: { 's3express:SessionMode': 'ReadOnly' } } }),
        }),
      );
    }
    for (const statement of statements) grantee.grantPrincipal.addToPrincipalPolicy(statement);
  }

  /** cdk-nag's finding ids for the object-level grants (`bucket/*`), to acknowledge them. */
  objectArnFindings(): string[] {
    const stack = Stack.of(this);
    return this.buckets.map(
      (b) => `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(b.node.defaultChild as s3.CfnBucket)}.Arn>/*]`,
    );
  }
}
