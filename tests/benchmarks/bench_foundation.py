#!/usr/bin/env python
"""Foundation benchmark for memstore: reindex, add, search (warm and cold) vs SQLite FTS5.

A standalone script, not a pytest module (nothing here is named test_*):

    python tests/benchmarks/bench_foundation.py --sizes 1000 10000 [--json out.json]

For each size N it builds a vault of N generated coding-agent memories in a temporary
folder (files written directly and committed in one commit, so generation is not
measured), then measures:

  * cold first catch-up (empty index) and `Store.reindex()` (full rebuild): wall, mem/s
  * `Store.catch_up()` with nothing changed (the scan an unwatched reader pays)
  * warm in-process `Store.search(q, workspace=None, k=5)` over 300 queries
  * cold `memstore search "<q>" --vault V` subprocesses, with `python -c pass` as floor,
    and the per-prompt agent hook `memstore hook prompt` (payload on stdin)
  * SQLite FTS5 (porter unicode61) on the same corpus and queries: build, warm, cold
  * in-process `Store.add` (200 new memories) and CLI `memstore add` (20 runs)

Search and add are measured in two configurations:

  * plain: no watcher, so every reader and writer scans the vault for outside changes;
  * with watcher: the way memstore runs beside an agent. In-process figures run with a
    `memstore.daemon.watcher.Watcher(store)` started in the same process (as `memstore serve`
    does); CLI figures run while a `memstore watch --vault V` subprocess holds
    `<V>/.memstore/watcher.lock`, so the CLI skips its catch-up scan.

Everything runs against temporary folders that are removed at the end.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstore.core.codec import derive_id, parse_memory, render_memory, slugify
from memstore.core.config import Settings
from memstore.core.model import Memory
from memstore.service.store import Store, init_vault
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo, Trailers

SEED = 20261129
WORKSPACES = (
    "global",
    "webshop",
    "billing-api",
    "infra",
    "mobile-app",
    "data-pipeline",
    "auth-service",
    "docs-site",
)
WORKSPACE_WEIGHTS = (22, 16, 14, 14, 8, 10, 10, 6)

TARGETS = {
    "reindex_per_s": 1000.0,  # >=
    "add_p50_ms": 40.0,  # <=
    "cli_add_median_ms": 300.0,  # <=
    "search_warm_p95_ms": 15.0,  # <=
    "cli_search_median_ms": 200.0,  # <=
}

# --- the corpus -------------------------------------------------------------------------
#
# Each topic: vocabulary words, symptoms, causes, fixes, config facts (component, key,
# value, path), commands (goal, command) and decisions (decision, reason).

TOPICS: dict[str, dict[str, Any]] = {
    "nginx": {
        "words": [
            "nginx",
            "upstream",
            "proxy",
            "vhost",
            "gzip",
            "tls",
            "certificate",
            "location block",
        ],
        "symptoms": [
            "uploads over 1 MB fail with 413 Request Entity Too Large",
            "502 Bad Gateway right after every deploy",
            "websocket connections drop after exactly 60 seconds",
            "static assets served with the wrong MIME type",
        ],
        "causes": [
            "client_max_body_size defaults to 1m in nginx",
            "the upstream unix socket path changed but nginx kept the old one",
            "proxy_read_timeout is 60s by default",
            "the types block was overridden in the server block",
        ],
        "fixes": [
            "set client_max_body_size 50m in the server block and reload nginx",
            "point the upstream at /run/app/gunicorn.sock and run nginx -t before reload",
            "raise proxy_read_timeout to 3600s on the websocket location",
            "include mime.types inside the http block",
        ],
        "config": [
            ("nginx", "client_max_body_size", "50m", "/etc/nginx/conf.d/app.conf"),
            ("nginx", "worker_connections", "4096", "/etc/nginx/nginx.conf"),
            ("nginx", "keepalive_timeout", "75s", "/etc/nginx/nginx.conf"),
        ],
        "commands": [
            ("check the nginx config", "nginx -t"),
            ("reload nginx without dropping connections", "systemctl reload nginx"),
            ("follow nginx errors", "tail -f /var/log/nginx/error.log"),
        ],
        "decisions": [
            ("terminate TLS at nginx, not in the app", "one place to rotate certificates"),
            ("serve uploads through nginx X-Accel-Redirect", "keeps workers free during downloads"),
        ],
    },
    "postgres": {
        "words": [
            "postgres",
            "postgresql",
            "psql",
            "vacuum",
            "index",
            "migration",
            "replica",
            "connection pool",
        ],
        "symptoms": [
            "FATAL: sorry, too many clients already under load",
            "deadlock detected during the nightly batch import",
            "queries on orders suddenly take 8 seconds",
            "relation does not exist after running migrations",
        ],
        "causes": [
            "max_connections is 100 and every gunicorn worker opens its own pool",
            "two jobs update invoices and payments in opposite order",
            "autovacuum fell behind and the planner uses stale statistics",
            "the migration ran against the replica, not the primary",
        ],
        "fixes": [
            "put pgbouncer in transaction mode in front of postgres",
            "always lock rows in primary key order inside one transaction",
            "run VACUUM ANALYZE orders and lower autovacuum_vacuum_scale_factor",
            "set DATABASE_URL to the primary host before alembic upgrade head",
        ],
        "config": [
            ("postgres", "max_connections", "200", "/var/lib/postgresql/data/postgresql.conf"),
            ("postgres", "shared_buffers", "4GB", "/var/lib/postgresql/data/postgresql.conf"),
            ("postgres", "work_mem", "64MB", "/var/lib/postgresql/data/postgresql.conf"),
        ],
        "commands": [
            ("dump the staging database", "pg_dump --format=custom -f staging.dump $DATABASE_URL"),
            (
                "find slow queries",
                "psql -c 'SELECT * FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20'",
            ),
            ("apply migrations", "alembic upgrade head"),
        ],
        "decisions": [
            ("use postgres advisory locks for the scheduler", "avoids a separate redis lock"),
            ("keep money as numeric(12,2), never float", "rounding bugs in invoices"),
        ],
    },
    "pytest": {
        "words": [
            "pytest",
            "fixture",
            "conftest",
            "flaky",
            "parametrize",
            "coverage",
            "monkeypatch",
            "tmp_path",
        ],
        "symptoms": [
            "tests pass alone but fail in the full suite",
            "pytest hangs forever in CI after the last test",
            "fixture 'db_session' not found in the integration tests",
            "coverage drops to 0% for the worker package",
        ],
        "causes": [
            "a module-level cache leaks state between tests",
            "a background thread started by the client is never joined",
            "conftest.py lives in a sibling folder pytest never collects",
            "the worker runs in a subprocess and coverage is not started there",
        ],
        "fixes": [
            "clear the cache in an autouse fixture",
            "close the client in a yield fixture with scope=session",
            "move conftest.py to tests/ and set testpaths in pyproject.toml",
            "set COVERAGE_PROCESS_START and add a sitecustomize hook",
        ],
        "config": [
            ("pytest", "testpaths", "tests", "pyproject.toml"),
            ("pytest", "filterwarnings", "error", "pyproject.toml"),
            ("pytest", "timeout", "120", "pytest.ini"),
        ],
        "commands": [
            ("run one failing test verbosely", "pytest -x -vv tests/test_orders.py::test_refund"),
            ("find flaky tests", "pytest -p randomly --count=20"),
            ("see why a test is slow", "pytest --durations=25"),
        ],
        "decisions": [
            (
                "integration tests use a real postgres in docker, not sqlite",
                "sqlite hid two locking bugs",
            ),
            ("every bug fix ships with a regression test", "the same refund bug came back twice"),
        ],
    },
    "docker": {
        "words": [
            "docker",
            "dockerfile",
            "image",
            "container",
            "compose",
            "layer",
            "buildkit",
            "registry",
        ],
        "symptoms": [
            "docker build takes 9 minutes after any source change",
            "container exits with code 137 during the data import",
            "docker compose up cannot resolve the db host",
            "image pulls fail with toomanyrequests from Docker Hub",
        ],
        "causes": [
            "COPY . . comes before pip install so the layer cache is always invalidated",
            "the container hits its memory limit and the OOM killer sends SIGKILL",
            "the services are on different compose networks",
            "anonymous pulls are rate limited per IP",
        ],
        "fixes": [
            "copy requirements.txt first and install before copying the source",
            "raise mem_limit to 2g and stream the import in batches",
            "put both services on the default network and use the service name",
            "log in to the registry mirror in CI before pulling",
        ],
        "config": [
            ("docker", "DOCKER_BUILDKIT", "1", ".env"),
            ("compose", "mem_limit", "2g", "docker-compose.yml"),
            ("docker", "registry-mirrors", "https://mirror.gcr.io", "/etc/docker/daemon.json"),
        ],
        "commands": [
            ("rebuild without cache", "docker compose build --no-cache api"),
            ("clean dangling images", "docker image prune -f"),
            ("open a shell in the api container", "docker compose exec api bash"),
        ],
        "decisions": [
            ("base images are pinned by digest", "a silent base image update broke openssl"),
            ("one process per container", "supervisord hid crashes"),
        ],
    },
    "k8s": {
        "words": [
            "kubernetes",
            "k8s",
            "kubectl",
            "pod",
            "deployment",
            "ingress",
            "configmap",
            "namespace",
        ],
        "symptoms": [
            "pods stuck in CrashLoopBackOff after the rollout",
            "readiness probe fails and the service has no endpoints",
            "ImagePullBackOff on the new node pool",
            "HPA never scales beyond two replicas",
        ],
        "causes": [
            "the configmap key was renamed but the deployment still mounts the old one",
            "the probe hits /healthz on port 80 while the app listens on 8080",
            "the node pool service account lacks pull rights on the registry",
            "CPU requests are missing so the HPA cannot compute utilisation",
        ],
        "fixes": [
            "kubectl rollout undo and rename the key in both manifests",
            "point the readinessProbe at port 8080",
            "grant roles/artifactregistry.reader to the node service account",
            "set resources.requests.cpu on every container",
        ],
        "config": [
            ("k8s", "replicas", "3", "deploy/api/deployment.yaml"),
            ("k8s", "readinessProbe.periodSeconds", "10", "deploy/api/deployment.yaml"),
            ("k8s", "maxSurge", "25%", "deploy/api/deployment.yaml"),
        ],
        "commands": [
            ("see why a pod restarts", "kubectl describe pod -l app=api -n prod"),
            ("tail logs of every api pod", "kubectl logs -f -l app=api --max-log-requests=10"),
            ("restart the api", "kubectl rollout restart deployment/api -n prod"),
        ],
        "decisions": [
            ("one namespace per environment", "RBAC stays simple"),
            ("no latest tags in manifests", "rollbacks need exact images"),
        ],
    },
    "terraform": {
        "words": [
            "terraform",
            "tfstate",
            "module",
            "provider",
            "plan",
            "apply",
            "workspace",
            "backend",
        ],
        "symptoms": [
            "terraform plan wants to destroy and recreate the database",
            "Error acquiring the state lock in CI",
            "provider version conflict after terraform init -upgrade",
            "drift: security group rules changed outside terraform",
        ],
        "causes": [
            "the engine_version attribute forces replacement",
            "a cancelled CI job left the DynamoDB lock behind",
            "two modules pin incompatible aws provider ranges",
            "someone edited the rules in the console",
        ],
        "fixes": [
            "add lifecycle { ignore_changes = [engine_version] } and upgrade by hand",
            "terraform force-unlock the lock id after checking no apply runs",
            "pin hashicorp/aws ~> 5.40 in versions.tf of every module",
            "import the rules and forbid console edits with an SCP",
        ],
        "config": [
            ("terraform", "required_version", ">= 1.7", "infra/versions.tf"),
            ("terraform", "backend.s3.bucket", "acme-tfstate", "infra/backend.tf"),
            ("terraform", "dynamodb_table", "tf-locks", "infra/backend.tf"),
        ],
        "commands": [
            ("plan only the network module", "terraform plan -target=module.network"),
            ("format all modules", "terraform fmt -recursive"),
            ("show the state of the db", "terraform state show aws_db_instance.main"),
        ],
        "decisions": [
            ("state lives in S3 with DynamoDB locking", "local state was lost once"),
            ("modules are versioned with git tags", "reproducible plans"),
        ],
    },
    "pnpm": {
        "words": [
            "pnpm",
            "npm",
            "node_modules",
            "lockfile",
            "workspace",
            "monorepo",
            "package.json",
            "node",
        ],
        "symptoms": [
            "npm install rewrites the lockfile and CI fails",
            "module not found: cannot resolve react in packages/ui",
            "pnpm install is slow in CI every time",
            "peer dependency warnings flood the build log",
        ],
        "causes": [
            "this repo uses pnpm and npm ignores pnpm-lock.yaml",
            "the package relies on a hoisted dependency that pnpm does not hoist",
            "the pnpm store is not cached between CI runs",
            "strict-peer-dependencies is off and versions drifted",
        ],
        "fixes": [
            "use pnpm, never npm, and enable corepack",
            "add react to packages/ui/package.json dependencies",
            "cache ~/.local/share/pnpm/store keyed on pnpm-lock.yaml",
            "pin peers with pnpm.overrides in the root package.json",
        ],
        "config": [
            ("pnpm", "packageManager", "pnpm@9.12.0", "package.json"),
            ("pnpm", "shamefully-hoist", "false", ".npmrc"),
            ("node", "engines.node", ">=20.11", "package.json"),
        ],
        "commands": [
            ("install exactly the lockfile", "pnpm install --frozen-lockfile"),
            ("run tests in one package", "pnpm --filter @acme/ui test"),
            ("see why a package is installed", "pnpm why lodash"),
        ],
        "decisions": [
            ("use pnpm, not npm, in every repo", "disk use and strictness"),
            ("node 20 LTS everywhere", "one runtime to patch"),
        ],
    },
    "gradle": {
        "words": [
            "gradle",
            "kotlin",
            "android",
            "build.gradle.kts",
            "daemon",
            "dependency",
            "jvm",
            "wrapper",
        ],
        "symptoms": [
            "gradle build fails with Could not resolve com.squareup.okhttp3:okhttp",
            "the gradle daemon dies with OutOfMemoryError: Metaspace",
            "configuration cache problems after upgrading AGP",
            "duplicate class kotlin.collections.jdk8 found in modules",
        ],
        "causes": [
            "the corporate proxy blocks repo1.maven.org",
            "org.gradle.jvmargs leaves metaspace unbounded at 256m",
            "a custom task reads project at execution time",
            "kotlin-stdlib-jdk8 and kotlin-stdlib 1.8 both end up on the classpath",
        ],
        "fixes": [
            "add the Nexus mirror in settings.gradle.kts dependencyResolutionManagement",
            "set org.gradle.jvmargs=-Xmx4g -XX:MaxMetaspaceSize=1g in gradle.properties",
            "capture the values in task inputs instead of reading project",
            "align kotlin versions with the kotlin BOM",
        ],
        "config": [
            ("gradle", "org.gradle.jvmargs", "-Xmx4g", "gradle.properties"),
            ("gradle", "org.gradle.caching", "true", "gradle.properties"),
            (
                "gradle",
                "distributionUrl",
                "gradle-8.10-bin.zip",
                "gradle/wrapper/gradle-wrapper.properties",
            ),
        ],
        "commands": [
            ("find who pulls a dependency", "./gradlew :app:dependencyInsight --dependency okhttp"),
            ("build the release bundle", "./gradlew bundleRelease"),
            ("stop all daemons", "./gradlew --stop"),
        ],
        "decisions": [
            ("build scripts are Kotlin DSL only", "type-safe accessors"),
            ("version catalog in gradle/libs.versions.toml", "one place for versions"),
        ],
    },
    "kafka": {
        "words": [
            "kafka",
            "topic",
            "partition",
            "consumer group",
            "offset",
            "broker",
            "producer",
            "schema registry",
        ],
        "symptoms": [
            "consumer lag grows all day on the orders topic",
            "duplicate events after a consumer rebalance",
            "RecordTooLargeException when publishing invoice batches",
            "the consumer group keeps rebalancing every few minutes",
        ],
        "causes": [
            "the topic has 3 partitions so only 3 consumers do any work",
            "offsets are committed before processing finishes",
            "message.max.bytes is 1 MB on the broker",
            "max.poll.interval.ms is shorter than the slowest batch",
        ],
        "fixes": [
            "increase orders to 24 partitions and scale the consumers",
            "commit offsets after the handler succeeds and make handlers idempotent",
            "split batches below 900 KB or raise max.request.size with the broker limit",
            "raise max.poll.interval.ms to 600000 and lower max.poll.records",
        ],
        "config": [
            ("kafka", "max.poll.interval.ms", "600000", "config/consumer.properties"),
            ("kafka", "retention.ms", "604800000", "topics/orders.yaml"),
            ("kafka", "acks", "all", "config/producer.properties"),
        ],
        "commands": [
            (
                "see consumer lag",
                "kafka-consumer-groups --bootstrap-server kafka:9092 --describe --group billing",
            ),
            ("read a topic from the start", "kafkacat -C -b kafka:9092 -t orders -o beginning"),
            ("list topics", "kafka-topics --bootstrap-server kafka:9092 --list"),
        ],
        "decisions": [
            ("events carry a schema version header", "consumers upgrade at their own pace"),
            ("one topic per aggregate", "ordering per key is enough"),
        ],
    },
    "redis": {
        "words": ["redis", "cache", "ttl", "eviction", "sentinel", "pubsub", "keyspace", "lua"],
        "symptoms": [
            "OOM command not allowed when used memory > maxmemory",
            "cache hit rate drops to 20% after deploy",
            "sessions vanish randomly for logged-in users",
            "latency spikes every hour on the redis primary",
        ],
        "causes": [
            "maxmemory-policy is noeviction",
            "the cache key now includes the build id",
            "sessions share the instance with the cache and allkeys-lru evicts them",
            "the hourly RDB snapshot forks a 12 GB process",
        ],
        "fixes": [
            "set maxmemory-policy allkeys-lru on the cache instance",
            "drop the build id from the cache key prefix",
            "move sessions to their own redis with volatile-lru",
            "switch persistence to AOF everysec on a replica",
        ],
        "config": [
            ("redis", "maxmemory-policy", "allkeys-lru", "/etc/redis/redis.conf"),
            ("redis", "maxmemory", "6gb", "/etc/redis/redis.conf"),
            ("redis", "timeout", "300", "/etc/redis/redis.conf"),
        ],
        "commands": [
            ("find big keys", "redis-cli --bigkeys"),
            ("watch commands live", "redis-cli monitor"),
            ("check memory use", "redis-cli info memory"),
        ],
        "decisions": [
            ("cache entries always have a TTL", "stale prices once lived for weeks"),
            ("no KEYS in production code", "it blocked the server for 2 s"),
        ],
    },
    "github-actions": {
        "words": [
            "github actions",
            "workflow",
            "runner",
            "ci",
            "matrix",
            "artifact",
            "secrets",
            "cache",
        ],
        "symptoms": [
            "the CI job is cancelled after 6 hours",
            "workflow cannot read secrets on pull requests from forks",
            "actions/cache never hits on the macos runner",
            "the release job runs twice for every tag",
        ],
        "causes": [
            "the e2e matrix runs every browser on every python version",
            "pull_request from forks gets a read-only token without secrets",
            "the cache key hashes a file that differs per OS",
            "the workflow triggers on both push tags and release published",
        ],
        "fixes": [
            "split e2e into its own workflow with a smaller matrix",
            "use pull_request_target only for labelled PRs",
            "key the cache on runner.os and the lockfile hash",
            "trigger the release only on push tags v*",
        ],
        "config": [
            ("ci", "timeout-minutes", "30", ".github/workflows/ci.yml"),
            ("ci", "concurrency.group", "ci-${{ github.ref }}", ".github/workflows/ci.yml"),
            ("ci", "permissions.contents", "read", ".github/workflows/release.yml"),
        ],
        "commands": [
            ("rerun failed jobs", "gh run rerun --failed"),
            ("watch the current run", "gh run watch"),
            ("lint workflows", "actionlint .github/workflows/*.yml"),
        ],
        "decisions": [
            ("pin third-party actions by commit sha", "supply-chain safety"),
            ("CI must finish in under 15 minutes", "slow CI got skipped"),
        ],
    },
    "typescript": {
        "words": ["typescript", "tsc", "tsconfig", "eslint", "vite", "react", "jest", "esm"],
        "symptoms": [
            "tsc reports Cannot find module '@acme/shared' in the editor only",
            "jest fails with SyntaxError: Cannot use import statement outside a module",
            "vite dev server reloads the whole page on every save",
            "eslint takes 90 seconds on the monorepo",
        ],
        "causes": [
            "paths in tsconfig.json are not mirrored in the editor's project references",
            "the dependency ships ESM only and jest runs CommonJS",
            "a circular import between store.ts and api.ts breaks HMR",
            "parserOptions.project type-checks every file",
        ],
        "fixes": [
            "add references to packages/shared in tsconfig.json",
            "add the package to transformIgnorePatterns or switch tests to vitest",
            "break the cycle by moving types to types.ts",
            "lint with typed rules only in CI and cache with --cache",
        ],
        "config": [
            ("typescript", "strict", "true", "tsconfig.json"),
            ("typescript", "moduleResolution", "bundler", "tsconfig.json"),
            ("vite", "server.port", "5173", "vite.config.ts"),
        ],
        "commands": [
            ("type-check without emitting", "pnpm tsc --noEmit -p tsconfig.json"),
            ("fix lint errors", "pnpm eslint . --fix --cache"),
            ("run one jest test", "pnpm jest src/cart/cart.test.ts -t 'applies coupon'"),
        ],
        "decisions": [
            ("strict mode stays on in every package", "any leaked into the API client"),
            ("vitest replaces jest for new packages", "native ESM"),
        ],
    },
    "python-packaging": {
        "words": ["python", "pip", "venv", "poetry", "uv", "wheel", "pyproject", "mypy"],
        "symptoms": [
            "ImportError: cannot import name 'soft_unicode' from markupsafe",
            "pip resolver backtracks for 20 minutes",
            "mypy says module is installed but missing library stubs",
            "the wheel is missing the templates folder",
        ],
        "causes": [
            "jinja2 2.x needs markupsafe below 2.1",
            "loose constraints let pip try every boto3 release",
            "types-requests is not in the dev dependencies",
            "package data is not declared in pyproject.toml",
        ],
        "fixes": [
            "upgrade jinja2 to 3.1 or pin markupsafe==2.0.1",
            "compile a lock with uv pip compile and install from it",
            "add types-requests to the dev extras",
            "add the templates folder to tool.hatch.build include",
        ],
        "config": [
            ("python", "requires-python", ">=3.11", "pyproject.toml"),
            ("mypy", "strict", "true", "pyproject.toml"),
            ("ruff", "line-length", "100", "pyproject.toml"),
        ],
        "commands": [
            ("create the dev environment", "uv venv && uv pip install -e '.[dev]'"),
            ("check types", "mypy src tests"),
            ("build the wheel", "python -m build --wheel"),
        ],
        "decisions": [
            ("uv replaces pip-tools for locking", "10x faster resolves"),
            ("python 3.11 is the floor", "pygit2 and typer need it"),
        ],
    },
    "git": {
        "words": ["git", "rebase", "merge", "branch", "submodule", "hook", "lfs", "bisect"],
        "symptoms": [
            "the pre-commit hook is skipped on some machines",
            "rebase conflicts in the lockfile on every pull",
            "git push rejected: file exceeds GitHub's 100 MB limit",
            "submodule stays at an old commit after pull",
        ],
        "causes": [
            "core.hooksPath is not set in fresh clones",
            "both branches regenerate pnpm-lock.yaml",
            "a test fixture dump was committed without LFS",
            "git pull does not update submodules by default",
        ],
        "fixes": [
            "run make setup, which sets core.hooksPath to .githooks",
            "add a merge driver that reruns the lockfile install",
            "git lfs migrate import --include='*.dump' and force-push the branch",
            "set submodule.recurse true in the repo config",
        ],
        "config": [
            ("git", "core.hooksPath", ".githooks", ".git/config"),
            ("git", "pull.rebase", "true", "~/.gitconfig"),
            ("git", "submodule.recurse", "true", ".git/config"),
        ],
        "commands": [
            ("find the commit that broke checkout", "git bisect run pytest tests/test_checkout.py"),
            ("undo the last commit but keep changes", "git reset --soft HEAD~1"),
            ("clean ignored files", "git clean -fdX"),
        ],
        "decisions": [
            ("squash merge only on main", "readable history"),
            ("conventional commit messages", "changelog generation"),
        ],
    },
    "aws": {
        "words": ["aws", "s3", "iam", "lambda", "cloudwatch", "rds", "ecs", "sqs"],
        "symptoms": [
            "AccessDenied when the lambda reads the uploads bucket",
            "the lambda times out at 3 seconds on cold start",
            "SQS messages are processed twice",
            "RDS storage fills up overnight",
        ],
        "causes": [
            "the bucket policy requires aws:SecureTransport and the SDK uses http",
            "the function is in a VPC without a NAT and waits for DNS",
            "the visibility timeout is shorter than the handler runtime",
            "the slow query log is on with log_min_duration_statement=0",
        ],
        "fixes": [
            "use the https endpoint and add s3:GetObject on uploads/* to the role",
            "add VPC endpoints for s3 and secretsmanager",
            "set the visibility timeout to six times the handler timeout",
            "set log_min_duration_statement to 500 ms",
        ],
        "config": [
            ("aws", "region", "eu-central-1", "~/.aws/config"),
            ("lambda", "timeout", "30", "serverless.yml"),
            ("sqs", "VisibilityTimeout", "180", "infra/queues.tf"),
        ],
        "commands": [
            ("tail lambda logs", "aws logs tail /aws/lambda/export-invoices --follow"),
            ("copy a backup down", "aws s3 cp s3://acme-backups/db/latest.dump ."),
            ("check who you are", "aws sts get-caller-identity"),
        ],
        "decisions": [
            ("no long-lived IAM user keys", "SSO and roles only"),
            ("everything in eu-central-1", "data residency"),
        ],
    },
    "elasticsearch": {
        "words": [
            "elasticsearch",
            "opensearch",
            "mapping",
            "shard",
            "analyzer",
            "reindex",
            "cluster",
            "query dsl",
        ],
        "symptoms": [
            "cluster health is yellow after adding a node",
            "search for part numbers misses exact matches",
            "mapper_parsing_exception on the price field",
            "bulk indexing rejected with es_rejected_execution_exception",
        ],
        "causes": [
            "replicas cannot be allocated on a single node",
            "the standard analyzer splits part numbers on hyphens",
            "dynamic mapping made price a long from the first document",
            "the write thread pool queue is full",
        ],
        "fixes": [
            "set number_of_replicas to 0 on the dev cluster",
            "add a keyword subfield and boost exact matches",
            "define price as scaled_float in the index template and reindex",
            "lower the bulk size to 5 MB and back off on 429",
        ],
        "config": [
            ("elasticsearch", "number_of_replicas", "1", "templates/products.json"),
            ("elasticsearch", "refresh_interval", "30s", "templates/products.json"),
            ("elasticsearch", "indices.memory.index_buffer_size", "20%", "elasticsearch.yml"),
        ],
        "commands": [
            ("check cluster health", "curl -s localhost:9200/_cluster/health?pretty"),
            (
                "see why a shard is unassigned",
                "curl -s localhost:9200/_cluster/allocation/explain?pretty",
            ),
            ("reindex products", "curl -XPOST localhost:9200/_reindex -d @reindex.json"),
        ],
        "decisions": [
            ("search index is rebuilt from postgres nightly", "postgres is the truth"),
            ("aliases for every index", "zero-downtime reindex"),
        ],
    },
    "go": {
        "words": [
            "go",
            "golang",
            "goroutine",
            "module",
            "context",
            "channel",
            "gofmt",
            "race detector",
        ],
        "symptoms": [
            "goroutine leak: memory grows until the pod is killed",
            "go build fails with missing go.sum entry",
            "data race reported in the metrics collector",
            "http client requests hang forever",
        ],
        "causes": [
            "the worker ignores ctx.Done() and blocks on an unbuffered channel",
            "a dependency was added without go mod tidy",
            "the counters map is written from several goroutines",
            "http.DefaultClient has no timeout",
        ],
        "fixes": [
            "select on ctx.Done() in every loop and close channels from the sender",
            "run go mod tidy and commit go.sum",
            "guard the map with a sync.Mutex or use sync.Map",
            "use an http.Client with Timeout: 10 * time.Second",
        ],
        "config": [
            ("go", "go", "1.23", "go.mod"),
            ("golangci-lint", "timeout", "5m", ".golangci.yml"),
            ("go", "GOFLAGS", "-mod=readonly", ".envrc"),
        ],
        "commands": [
            ("run tests with the race detector", "go test -race ./..."),
            ("profile CPU", "go tool pprof http://localhost:6060/debug/pprof/profile"),
            ("update one dependency", "go get github.com/jackc/pgx/v5@latest"),
        ],
        "decisions": [
            ("errors are wrapped with %w", "errors.Is works across layers"),
            ("no global state in handlers", "tests run in parallel"),
        ],
    },
    "auth": {
        "words": ["oauth", "jwt", "oidc", "token", "session", "cookie", "sso", "keycloak"],
        "symptoms": [
            "users are logged out every 5 minutes",
            "invalid_grant when refreshing tokens in staging",
            "CORS error on the login callback",
            "JWT signature verification fails after key rotation",
        ],
        "causes": [
            "the access token lifetime is 300 s and refresh is never attempted",
            "staging and prod share a client id with different secrets",
            "the redirect URI lacks the trailing slash registered in keycloak",
            "the service caches the JWKS forever",
        ],
        "fixes": [
            "refresh the token 60 s before exp in the API client",
            "give staging its own client in keycloak",
            "register both redirect URIs or normalise the slash",
            "refetch the JWKS when a kid is unknown",
        ],
        "config": [
            ("keycloak", "accessTokenLifespan", "900", "realm-export.json"),
            ("auth", "SESSION_COOKIE_SAMESITE", "Lax", "settings.py"),
            ("auth", "JWKS_CACHE_TTL", "3600", "auth/config.py"),
        ],
        "commands": [
            ("decode a token", "jwt decode $TOKEN"),
            ("export the realm", "kc.sh export --realm acme --file realm-export.json"),
            ("get a test token", "curl -d grant_type=client_credentials $KEYCLOAK/token"),
        ],
        "decisions": [
            ("keycloak is the only identity provider", "one place for MFA"),
            ("tokens never go in localStorage", "XSS exposure"),
        ],
    },
}


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NOUNS = _words(
    "invoice user session token order cart payment report cache queue worker job "
    "batch schema migration tenant account webhook export import metric event config "
    "feature flag coupon shipment refund ledger price catalog inventory search upload "
    "avatar"
)
VERBS = _words(
    "parse load sync retry flush validate render fetch build publish consume refresh "
    "resolve merge emit compute apply reconcile"
)
ROLES = _words("Service Client Handler Repository Factory Controller Worker Parser Manager Adapter")
PROJECTS = ("SHOP", "BILL", "OPS", "MOB", "DATA", "AUTH", "DOCS", "PLAT")
PEOPLE = ("maria", "jonas", "li", "sam", "fatima", "tom", "priya", "kenji", "ola", "diego")
HOST_ROLES = ("db", "api", "worker", "cache", "kafka", "search", "gateway", "runner")
ENVS = ("staging", "prod", "dev", "qa")
LANG_EXT = ("py", "ts", "go", "kt", "tsx", "sql")
STOP = set(
    _words(
        "the a an and or of to in on at for from with by is are was be it this that as "
        "not no if into its their every only before after one all any out up has have "
        "when while"
    )
)
WORD = re.compile(r"[A-Za-z][A-Za-z]{2,}")


@dataclass(frozen=True)
class Generated:
    workspace: str
    kind: str
    body: str
    keywords: tuple[str, ...]
    identifiers: tuple[str, ...]  # exact things a query may look for
    topic: str


class Corpus:
    """Deterministic generator of realistic coding-agent memories."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.topics = sorted(TOPICS)
        self.start = datetime(2025, 1, 1, tzinfo=UTC)

    def _snake(self) -> str:
        r = self.rng
        return f"{r.choice(VERBS)}_{r.choice(NOUNS)}_{r.choice(NOUNS)}"

    def _camel(self) -> str:
        r = self.rng
        return f"{r.choice(NOUNS).title()}{r.choice(NOUNS).title()}{r.choice(ROLES)}"

    def _path(self) -> str:
        r = self.rng
        return f"src/{r.choice(NOUNS)}/{self._snake()}.{r.choice(LANG_EXT)}"

    def _version(self) -> str:
        r = self.rng
        return f"{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 40)}"

    def _ticket(self) -> str:
        return f"{self.rng.choice(PROJECTS)}-{self.rng.randint(100, 9999)}"

    def _host(self) -> str:
        r = self.rng
        return f"{r.choice(HOST_ROLES)}-{r.choice(ENVS)}-{r.randint(1, 40):02d}.internal"

    def _extra(self) -> tuple[str, str]:
        """Return a trailing sentence with a selective identifier, and that identifier."""
        r = self.rng
        choice = r.randrange(7)
        if choice == 0:
            ident = self._path()
            return f" Seen in {ident}.", ident
        if choice == 1:
            ident = self._snake()
            return f" The failing call was `{ident}()`.", ident
        if choice == 2:
            ident = self._camel()
            return f" Affects {ident}.", ident
        if choice == 3:
            ident = self._ticket()
            return f" Tracked in {ident}.", ident
        if choice == 4:
            ident = self._host()
            return f" Reproduced on {ident}.", ident
        if choice == 5:
            ident = f"v{self._version()}"
            return f" Fixed upstream in {ident}.", ident
        ident = f"@{r.choice(PEOPLE)}"
        return f" Ask {ident} before changing it.", ident

    def make(self) -> Generated:
        r = self.rng
        workspace = r.choices(WORKSPACES, WORKSPACE_WEIGHTS)[0]
        name = r.choice(self.topics)
        topic = TOPICS[name]
        shape = r.choices(("lesson", "decision", "command", "config"), (40, 20, 20, 20))[0]
        idents: list[str] = []
        if shape == "lesson":
            i = r.randrange(len(topic["symptoms"]))
            # cause and fix usually match the symptom, sometimes another of the topic's
            j = i if r.random() < 0.7 else r.randrange(len(topic["causes"]))
            body = f"{topic['symptoms'][i]} — {topic['causes'][j]} — fix: {topic['fixes'][j]}."
            kind = "lesson"
        elif shape == "decision":
            decision, reason = r.choice(topic["decisions"])
            body = f"Decision: {decision} in {workspace}; reason: {reason}. Agreed with @{r.choice(PEOPLE)}."
            kind = r.choice(("note", "note", "core"))
        elif shape == "command":
            goal, command = r.choice(topic["commands"])
            body = f"To {goal}, run `{command}`"
            if r.random() < 0.5:
                body += f" (needs {name} {self._version()})"
            body += "."
            kind = r.choice(("note", "trace"))
        else:
            component, key, value, path = r.choice(topic["config"])
            body = f"{component} {key} is {value} in {path} for {r.choice(ENVS)}."
            idents.append(key)
            kind = "note"
        # Most memories carry a selective detail; some mention a second topic.
        if r.random() < 0.8:
            sentence, ident = self._extra()
            body += sentence
            idents.append(ident)
        if r.random() < 0.25:
            other = TOPICS[r.choice(self.topics)]
            body += f" Related: {r.choice(other['words'])} {r.choice(other['words'])}."
        body += f" ({r.randint(1, 99999)})" if r.random() < 0.5 else f" #{r.randint(1, 99999)}"
        words = list(topic["words"])
        keywords = [name, *r.sample(words, r.randint(1, 3))]
        if idents and r.random() < 0.4:
            keywords.append(idents[0].lower())
        keywords = list(dict.fromkeys(k.lower() for k in keywords if len(k) <= 64))
        return Generated(workspace, kind, body + "\n", tuple(keywords), tuple(idents), name)

    def created(self) -> str:
        moment = self.start + timedelta(seconds=self.rng.randrange(0, 600 * 86400))
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_vault(root: Path, n: int, corpus: Corpus, settings: Settings) -> list[Generated]:
    """Create a vault with `n` distinct memories, committed in one commit."""
    init_vault(root, settings)
    used_ids: set[str] = set()
    seen_bodies: set[tuple[str, str]] = set()
    items: list[Generated] = []
    paths: list[str] = []
    while len(items) < n:
        g = corpus.make()
        if (g.workspace, g.body) in seen_bodies:
            continue
        seen_bodies.add((g.workspace, g.body))
        length = 8
        memory_id = derive_id(g.workspace, g.body, length)
        while memory_id in used_ids:
            length += 2
            memory_id = derive_id(g.workspace, g.body, length)
        used_ids.add(memory_id)
        memory = Memory(
            id=memory_id,
            workspace=g.workspace,
            body=g.body,
            kind=g.kind,
            keywords=g.keywords,
            source=corpus.rng.choice(("claude-code", "codex", "cli", "cursor")),
            created=corpus.created(),
            seen=corpus.rng.choice((1, 1, 1, 2, 3)),
        )
        rel = f"{g.workspace}/{slugify(g.body)}-{memory_id}.md"
        path = root / rel
        path.parent.mkdir(exist_ok=True, mode=0o700)
        path.write_text(render_memory(memory), encoding="utf-8")
        paths.append(rel)
        items.append(g)
    trailers = Trailers(settings.source, settings.session, settings.host)
    GitRepo.open(root).commit(f"import: {n} generated memories", trailers, add=tuple(paths))
    return items


# --- queries ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    text: str
    category: str  # vocab | cross | identifier | partial | none


def _nonsense(rng: random.Random) -> str:
    return (
        "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiouy") for _ in range(4)) + "x"
    )


def make_queries(items: Sequence[Generated], count: int, seed: int) -> list[Query]:
    rng = random.Random(seed)
    all_words = sorted({w for t in TOPICS.values() for w in t["words"]})
    queries: list[Query] = []
    cats = rng.choices(
        ("vocab", "cross", "identifier", "partial", "none"), (50, 15, 20, 5, 10), k=count
    )
    for cat in cats:
        if cat == "vocab":
            g = rng.choice(items)
            words = [w.lower() for w in WORD.findall(g.body) if w.lower() not in STOP]
            n = min(len(words), rng.choice((1, 2, 2, 3)))
            start = rng.randrange(0, max(1, len(words) - n + 1))
            picked = words[start : start + n] if rng.random() < 0.5 else rng.sample(words, n)
            queries.append(Query(" ".join(picked), cat))
        elif cat == "cross":
            queries.append(Query(" ".join(rng.sample(all_words, rng.choice((2, 3)))), cat))
        elif cat == "identifier":
            with_ids = [g for g in (rng.choice(items) for _ in range(20)) if g.identifiers]
            g = with_ids[0] if with_ids else rng.choice(items)
            ident = rng.choice(g.identifiers) if g.identifiers else g.topic
            queries.append(Query(ident, cat))
        elif cat == "partial":
            queries.append(Query(f"{rng.choice(all_words)} {_nonsense(rng)}", cat))
        else:
            queries.append(Query(" ".join(_nonsense(rng) for _ in range(rng.choice((1, 2)))), cat))
    return queries


# --- measuring --------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    """Percentile with linear interpolation (q in 0..100)."""
    data = sorted(values)
    if not data:
        return float("nan")
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summary(values_ms: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values_ms),
        "p50": round(pct(values_ms, 50), 3),
        "median": round(statistics.median(values_ms), 3),
        "p95": round(pct(values_ms, 95), 3),
        "min": round(min(values_ms), 3),
        "max": round(max(values_ms), 3),
        "mean": round(statistics.fmean(values_ms), 3),
    }


def timed_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def run_many(
    argvs: Iterable[list[str]],
    env: dict[str, str],
    cwd: Path,
    inputs: Sequence[str] | None = None,
) -> list[float]:
    out = []
    for i, argv in enumerate(argvs):
        stdin = None if inputs is None else inputs[i]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, input=stdin)
        out.append((time.perf_counter() - t0) * 1000)
        if proc.returncode != 0:
            raise RuntimeError(
                f"{argv[:3]}… failed ({proc.returncode}): {proc.stderr.strip()[:400]}"
            )
    return out


def memstore_command() -> str:
    """The `memstore` executable of this interpreter's environment."""
    bindir = Path(sys.executable).parent
    exe = str(bindir / "memstore") if (bindir / "memstore").exists() else shutil.which("memstore")
    if not exe:
        raise SystemExit("the memstore command is not installed (activate the venv)")
    return exe


def subprocess_env(home: Path) -> dict[str, str]:
    """A small, fixed environment for memstore subprocesses (temporary HOME, the snapshot)."""
    bindir = Path(sys.executable).parent
    env = {
        "HOME": str(home),
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "MEMSTORE_SESSION": "bench",
        "MEMSTORE_HOST": "bench",
    }
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]  # the source snapshot, see exec_from_snapshot
    return env


def wait_for(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.01) -> float:
    """Poll `condition` until true (bounded); return the seconds it took."""
    t0 = time.perf_counter()
    deadline = t0 + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{what}: not done within {timeout:.0f} s")
        time.sleep(poll)
    return time.perf_counter() - t0


class WatchProcess:
    """`memstore watch --vault V` in the background, the way it runs beside an agent."""

    def __init__(self, exe: str, root: Path, env: dict[str, str], cwd: Path) -> None:
        self.root = root
        self.stderr_path = cwd / f"watch-{os.getpid()}-{time.monotonic_ns()}.log"
        self._stderr = open(self.stderr_path, "w")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [exe, "watch", "--vault", str(root)],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )
        self.ready_s = 0.0

    def wait_ready(self, timeout: float = 120.0) -> WatchProcess:
        """Return once the watcher holds `<V>/.memstore/watcher.lock` (its first catch-up done)."""
        vault = Vault(self.root)

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"memstore watch exited early: {self.stderr_text()[-400:]}")
            return vault.is_watched()

        self.ready_s = wait_for(ready, timeout, "memstore watch to hold watcher.lock")
        return self

    def stderr_text(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()  # `memstore watch` stops cleanly on SIGTERM
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._stderr.close()
        return self.proc.returncode

    def __enter__(self) -> WatchProcess:
        return self.wait_ready()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def cpu_mark() -> tuple[float, float, float]:
    """(wall, CPU seconds of every process on the machine, CPU seconds of this process tree)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    busy = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    t = os.times()
    return time.perf_counter(), busy, t.user + t.system + t.children_user + t.children_system


def foreign_load(start: tuple[float, float, float]) -> dict[str, float]:
    """How busy other processes kept the machine since `start` (they skew the figures)."""
    end = cpu_mark()
    wall = end[0] - start[0]
    others = max(0.0, (end[1] - start[1]) - (end[2] - start[2]))
    return {"wall_s": round(wall, 1), "cpu_s": round(others, 1), "cores": round(others / wall, 2)}


SNAPSHOT_ENV = "MEMSTORE_BENCH_SNAPSHOT"
LIVE_ENV = "MEMSTORE_BENCH_LIVE"


def source_base() -> Path:
    """The folder holding the memstore/ and index/ packages this process imported."""
    import memstore

    return Path(memstore.__file__).resolve().parent.parent


def code_fingerprint(base: Path) -> dict[str, str]:
    """Hash of the product sources (memstore/, index/), so figures can be tied to a version."""
    import hashlib

    digest = hashlib.sha256()
    newest = 0.0
    for folder in ("memstore", "index"):
        for f in sorted((base / folder).rglob("*.py")):
            digest.update(f.relative_to(base).as_posix().encode() + b"\0" + f.read_bytes())
            newest = max(newest, f.stat().st_mtime)
    changed = datetime.fromtimestamp(newest, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return {"sha256": digest.hexdigest()[:16], "newest_source_change": changed, "path": str(base)}


def exec_from_snapshot(argv: list[str], script: str | None = None) -> None:
    """Copy the product sources aside and rerun this script on the copy.

    The project may be edited while the benchmark runs; in-process code is imported once,
    but every `memstore` subprocess would load whatever is on disk at that moment. Running
    everything (this process and its subprocesses, via PYTHONPATH) from one copy keeps the
    figures of a run consistent with one version of the code.
    """
    live = source_base()
    src = Path(tempfile.mkdtemp(prefix="memstore-bench-src-"))
    for folder in ("memstore", "index"):
        shutil.copytree(live / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, SNAPSHOT_ENV: str(src), LIVE_ENV: str(live), "PYTHONPATH": path}
    sys.stdout.flush()
    target = Path(script or __file__).resolve()
    os.execve(sys.executable, [sys.executable, str(target), *argv], env)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- FTS5 reference ---------------------------------------------------------------------

_FTS_TOKEN = re.compile(r"\w")


def fts_match(query: str, *, any_term: bool = False) -> str:
    """Every whitespace-separated term quoted as a string (no FTS5 syntax can leak in)."""
    terms = ['"' + t.replace('"', '""') + '"' for t in query.split() if _FTS_TOKEN.search(t)]
    return (" OR " if any_term else " AND ").join(terms)


FTS_SQL = (
    "SELECT path, workspace, content, keywords, bm25(mem) FROM mem WHERE mem MATCH ? "
    "ORDER BY rank LIMIT ?"
)


def fts_search(db: sqlite3.Connection, query: str, k: int, *, fallback: bool) -> list[Any]:
    match = fts_match(query)
    if not match:
        return []
    rows = db.execute(FTS_SQL, (match, k)).fetchall()
    if rows or not fallback:
        return rows
    return db.execute(FTS_SQL, (fts_match(query, any_term=True), k)).fetchall()


def fts_build(vault_root: Path, db_path: Path) -> dict[str, float]:
    """Build the FTS5 table from the vault's files (read + parse + insert)."""
    t0 = time.perf_counter()
    rows = []
    for folder in sorted(
        p for p in vault_root.iterdir() if p.is_dir() and not p.name.startswith(".")
    ):
        for f in sorted(folder.glob("*.md")):
            rel = f"{folder.name}/{f.name}"
            m = parse_memory(f.read_text(encoding="utf-8"), path=rel)
            rows.append((rel, m.workspace, m.body, " ".join(m.keywords)))
    t1 = time.perf_counter()
    db = sqlite3.connect(db_path)
    db.execute(
        "CREATE VIRTUAL TABLE mem USING fts5(path UNINDEXED, workspace UNINDEXED, content, "
        "keywords, tokenize='porter unicode61')"
    )
    with db:
        db.executemany("INSERT INTO mem VALUES (?, ?, ?, ?)", rows)
    db.close()
    t2 = time.perf_counter()
    return {
        "read_parse_ms": round((t1 - t0) * 1000, 1),
        "insert_ms": round((t2 - t1) * 1000, 1),
        "total_ms": round((t2 - t0) * 1000, 1),
        "docs": len(rows),
    }


FTS_COLD = (
    "import sqlite3,sys\n"
    "c=sqlite3.connect(sys.argv[1])\n"
    "r=c.execute(" + repr(FTS_SQL) + ",(sys.argv[2],5)).fetchall()\n"
    "print(len(r))\n"
)


# --- one size ---------------------------------------------------------------------------


def warm_search(store: Store, queries: Sequence[Query], warmup: int) -> dict[str, Any]:
    """Time `Store.search(q, workspace=None, k=5)` (default catch_up) over every query."""
    for q in queries[:warmup]:
        store.search(q.text, workspace=None, k=5)
    per_cat: dict[str, list[float]] = {}
    times: list[float] = []
    hit_counts: list[int] = []
    weak = 0
    for q in queries:
        t, r = timed_ms(lambda q=q: store.search(q.text, workspace=None, k=5))
        times.append(t)
        per_cat.setdefault(q.category, []).append(t)
        hit_counts.append(len(r.hits))
        weak += r.weak
    return {
        "all": summary(times),
        "by_category": {c: summary(v) for c, v in sorted(per_cat.items())},
        "outcomes": {
            "with_hits": sum(1 for h in hit_counts if h),
            "no_hits": sum(1 for h in hit_counts if not h),
            "weak_fallback": weak,
        },
    }


def add_all(store: Store, items: Sequence[Generated]) -> tuple[list[float], dict[str, int]]:
    """Time `Store.add` for each item; return the times and the statuses seen."""
    times = []
    statuses: dict[str, int] = {}
    for g in items:
        t, r = timed_ms(
            lambda g=g: store.add(g.body, workspace=g.workspace, kind=g.kind, keywords=g.keywords)
        )
        times.append(t)
        statuses[r.status] = statuses.get(r.status, 0) + 1
    return times, statuses


def add_argvs(exe: str, root: Path, items: Sequence[Generated]) -> list[list[str]]:
    argvs = []
    for g in items:
        argv = [exe, "add", g.body, "-w", g.workspace, "--kind", g.kind, "--vault", str(root)]
        for kw in g.keywords:
            argv += ["-K", kw]
        argvs.append(argv)
    return argvs


def bench_size(n: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from memstore.daemon.watcher import Watcher

    res: dict[str, Any] = {"n": n}
    home = tmp / "home"
    home.mkdir()
    root = tmp / "vault"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    memstore_exe = memstore_command()
    env = subprocess_env(home)
    cwd = tmp  # not inside a git repository: no workspace is detected, search covers all

    # -- generate (not measured as a product figure)
    log(f"[N={n}] generating vault …")
    corpus = Corpus(SEED + n)
    t, items = timed_ms(lambda: write_vault(root, n, corpus, settings))
    res["setup_generate_commit_ms"] = round(t, 1)
    queries = make_queries(items, args.queries, SEED * 7 + n)
    res["query_mix"] = {
        c: sum(1 for q in queries if q.category == c)
        for c in ("vocab", "cross", "identifier", "partial", "none")
    }

    # -- cold first catch-up: no index yet, the first search would build it
    log(f"[N={n}] cold first catch-up …")
    store = Store(settings, Vault(root))
    t, cu = timed_ms(store.catch_up)
    res["first_catch_up"] = {
        "ms": round(t, 1),
        "indexed": len(cu.updated),
        "per_s": round(len(cu.updated) / (t / 1000), 1),
    }
    assert len(cu.updated) == n, (len(cu.updated), n)

    # -- full reindex
    runs = args.reindex_runs or (3 if n <= 2000 else 1)
    log(f"[N={n}] reindex ×{runs} …")
    times = []
    for _ in range(runs):
        t, cu = timed_ms(store.reindex)
        assert len(cu.updated) == n
        times.append(t)
    best = min(times)
    res["reindex"] = {
        "runs_ms": [round(x, 1) for x in times],
        "best_ms": round(best, 1),
        "median_ms": round(statistics.median(times), 1),
        "per_s": round(n / (statistics.median(times) / 1000), 1),
    }

    # -- catch-up with nothing changed (what every search and add pays first when unwatched)
    log(f"[N={n}] no-op catch-up …")
    store.catch_up()
    cu_times, scan_times, manifest_times = [], [], []
    for _ in range(args.catchup_runs):
        t, cu = timed_ms(store.catch_up)
        assert not cu.updated and not cu.removed
        cu_times.append(t)
        scan_times.append(timed_ms(store.vault.scan)[0])
        fingerprints = getattr(store.indexer, "fingerprints", None)  # diagnostic only
        if fingerprints is not None:
            manifest_times.append(timed_ms(fingerprints)[0])
    res["catch_up_noop"] = summary(cu_times)
    res["catch_up_parts"] = {"vault_scan": summary(scan_times)}
    if manifest_times:
        res["catch_up_parts"]["manifest_read"] = summary(manifest_times)
    res["is_watched_check"] = summary(
        [timed_ms(store.vault.is_watched)[0] for _ in range(args.catchup_runs)]
    )

    # -- warm in-process search, plain: every search scans the vault first
    log(f"[N={n}] warm search, plain ×{len(queries)} …")
    plain = warm_search(store, queries, args.warmup)
    res["search_warm"] = plain["all"]
    res["search_warm_by_category"] = plain["by_category"]
    res["search_outcomes"] = plain["outcomes"]
    # the same searches without any catch-up: the search pipeline alone (diagnostic)
    nocu = [
        timed_ms(lambda q=q: store.search(q.text, workspace=None, k=5, catch_up=False))[0]
        for q in queries
    ]
    res["search_warm_index_only"] = summary(nocu)

    # -- warm in-process search with a Watcher in the same process (as `memstore serve`)
    log(f"[N={n}] warm search, with watcher ×{len(queries)} …")
    t, watcher = timed_ms(lambda: Watcher(store).start())
    try:
        if not store.vault.is_watched():
            raise RuntimeError("the in-process watcher did not take watcher.lock")
        res["watcher_start_ms"] = round(t, 1)
        watched = warm_search(store, queries, args.warmup)
    finally:
        watcher.stop()
    res["search_warm_watched"] = watched["all"]
    res["search_warm_watched_by_category"] = watched["by_category"]
    if watched["outcomes"] != plain["outcomes"]:
        log(f"note: outcomes differ with watcher: {watched['outcomes']} vs {plain['outcomes']}")
    store.close()

    # -- FTS5 reference on the same corpus and queries
    log(f"[N={n}] FTS5 reference …")
    db_path = tmp / "fts.sqlite"
    res["fts5_build"] = fts_build(root, db_path)
    db = sqlite3.connect(db_path)
    for q in queries[: args.warmup]:
        fts_search(db, q.text, 5, fallback=False)
    fts_and, fts_fb, fts_hits = [], [], 0
    for q in queries:
        t, rows = timed_ms(lambda q=q: fts_search(db, q.text, 5, fallback=False))
        fts_and.append(t)
        fts_hits += bool(rows)
        fts_fb.append(timed_ms(lambda q=q: fts_search(db, q.text, 5, fallback=True))[0])
    db.close()
    res["fts5_warm_and"] = summary(fts_and)
    res["fts5_warm_and_or_fallback"] = summary(fts_fb)
    res["fts5_queries_with_hits"] = fts_hits

    # -- cold processes, plain: interpreter floor, memstore search, FTS5 one-query process
    cli_queries = [q for q in queries if fts_match(q.text)][
        :: max(1, len(queries) // args.cli_runs)
    ]
    cli_queries = cli_queries[: args.cli_runs]
    search_argvs = [[memstore_exe, "search", q.text, "--vault", str(root)] for q in cli_queries]
    log(f"[N={n}] cold processes, plain ×{len(cli_queries)} …")
    py = sys.executable
    run_many([[py, "-c", "pass"]] * 3, env, cwd)  # warm the page cache
    floor = run_many([[py, "-c", "pass"]] * len(cli_queries), env, cwd)
    run_many(search_argvs[:2], env, cwd)
    cli = run_many(search_argvs, env, cwd)
    fts_cold = run_many(
        [[py, "-c", FTS_COLD, str(db_path), fts_match(q.text)] for q in cli_queries], env, cwd
    )
    res["python_floor"] = summary(floor)
    res["cli_search"] = summary(cli)
    res["fts5_cold_query"] = summary(fts_cold)
    # the per-prompt agent hook: same lean path, payload on stdin, vault from the environment
    hook_env = {**env, "MEMSTORE_VAULT": str(root)}
    hook_argvs = [[memstore_exe, "hook", "prompt"]] * len(cli_queries)
    hook_inputs = [
        json.dumps({"prompt": q.text, "cwd": str(cwd), "session_id": "bench"}) for q in cli_queries
    ]
    hook_check = subprocess.run(
        hook_argvs[0], env=hook_env, cwd=cwd, capture_output=True, text=True, input=hook_inputs[0]
    )
    if hook_check.stderr.strip():  # a hook exits 0 even when it fails: make a failure visible
        raise RuntimeError(f"memstore hook prompt complained: {hook_check.stderr.strip()[:400]}")
    run_many(hook_argvs[:2], hook_env, cwd, hook_inputs[:2])
    res["cli_hook_prompt"] = summary(run_many(hook_argvs, hook_env, cwd, hook_inputs))

    # -- fresh memories for the add measurements (none is a duplicate of the vault)
    existing = {(g.workspace, g.body) for g in items}
    fresh: list[Generated] = []
    add_corpus = Corpus(SEED + n + 1)
    while len(fresh) < 2 * (args.adds + args.cli_adds):
        g = add_corpus.make()
        if (g.workspace, g.body) not in existing:
            existing.add((g.workspace, g.body))
            fresh.append(g)
    adds_plain = fresh[: args.adds]
    adds_watched = fresh[args.adds : 2 * args.adds]
    cli_plain = fresh[2 * args.adds : 2 * args.adds + args.cli_adds]
    cli_watched = fresh[2 * args.adds + args.cli_adds :]

    # -- in-process add, plain and with a watcher in the same process
    log(f"[N={n}] in-process add, plain ×{args.adds} …")
    store = Store(settings, Vault(root))
    store.catch_up()  # open the index outside the measurement
    adds, statuses = add_all(store, adds_plain)
    res["add_inprocess"] = summary(adds)
    res["add_statuses"] = statuses
    log(f"[N={n}] in-process add, with watcher ×{args.adds} …")
    with Watcher(store):
        adds, statuses = add_all(store, adds_watched)
    res["add_inprocess_watched"] = summary(adds)
    res["add_watched_statuses"] = statuses
    store.close()

    # -- CLI add, plain
    log(f"[N={n}] CLI add, plain ×{args.cli_adds} …")
    res["cli_add"] = summary(run_many(add_argvs(memstore_exe, root, cli_plain), env, cwd))

    # -- cold processes beside a running `memstore watch`
    log(f"[N={n}] starting memstore watch …")
    with WatchProcess(memstore_exe, root, env, cwd) as watch:
        res["watch_ready_s"] = round(watch.ready_s, 2)
        log(f"[N={n}] cold search, with watcher ×{len(cli_queries)} …")
        run_many(search_argvs[:2], env, cwd)
        res["cli_search_watched"] = summary(run_many(search_argvs, env, cwd))
        res["cli_hook_prompt_watched"] = summary(run_many(hook_argvs, hook_env, cwd, hook_inputs))
        log(f"[N={n}] CLI add, with watcher ×{args.cli_adds} …")
        res["cli_add_watched"] = summary(
            run_many(add_argvs(memstore_exe, root, cli_watched), env, cwd)
        )
        # let the watcher index the last add before it is stopped
        time.sleep(1.0)
    res["watch_exit_code"] = watch.proc.returncode

    with Store(settings, Vault(root)) as check:
        check.catch_up()
        res["final_memories"] = len(check.indexer.entries())
        drift = check.indexer.drift()
        res["final_drift_clean"] = drift.is_clean
    expected = n + 2 * args.adds + 2 * args.cli_adds
    if res["final_memories"] != expected:
        log(f"note: {res['final_memories']} memories at the end, expected {expected}")
    return res


# --- report -----------------------------------------------------------------------------


def status(value: float, target: float, higher_is_better: bool) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "met" if ok else "MISSED"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "n/a"


def table_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(figure, memstore, target, verdict, FTS5 reference and ratio) for one size."""
    fb = r["fts5_build"]
    parts = r["catch_up_parts"]
    lex = r.get("search_warm_index_only")
    fts_fb = r["fts5_warm_and_or_fallback"]
    fts_and = r["fts5_warm_and"]

    def add_row(label: str, key: str) -> tuple[str, str, str, str, str]:
        a = r[key]
        return (
            label,
            f"p50 {a['p50']:.1f} / p95 {a['p95']:.1f} ms",
            "p50 <= 40 ms",
            status(a["p50"], TARGETS["add_p50_ms"], False),
            "",
        )

    def cli_add_row(label: str, key: str) -> tuple[str, str, str, str, str]:
        a = r[key]
        return (
            label,
            f"median {a['median']:.0f} ms (p95 {a['p95']:.0f})",
            "median <= 300 ms",
            status(a["median"], TARGETS["cli_add_median_ms"], False),
            "",
        )

    def warm_row(label: str, key: str) -> tuple[str, str, str, str, str]:
        w = r[key]
        return (
            label,
            f"p50 {w['p50']:.2f} / p95 {w['p95']:.2f} ms",
            "p95 <= 15 ms",
            status(w["p95"], TARGETS["search_warm_p95_ms"], False),
            f"FTS5 AND p50 {fts_and['p50']:.3f} / p95 {fts_and['p95']:.3f} ms; "
            f"{ratio(w['p50'], fts_and['p50'])} / {ratio(w['p95'], fts_and['p95'])}",
        )

    def cli_search_row(label: str, key: str) -> tuple[str, str, str, str, str]:
        c = r[key]
        return (
            label,
            f"median {c['median']:.0f} / p95 {c['p95']:.0f} ms",
            "median <= 200 ms",
            status(c["median"], TARGETS["cli_search_median_ms"], False),
            f"FTS5 cold process median {r['fts5_cold_query']['median']:.0f} ms; "
            f"{ratio(c['median'], r['fts5_cold_query']['median'])}",
        )

    rows = [
        (
            "first catch-up (empty index)",
            f"{r['first_catch_up']['ms'] / 1000:.2f} s, {r['first_catch_up']['per_s']:.0f}/s",
            "",
            "",
            "",
        ),
        (
            "full reindex (median)",
            f"{r['reindex']['median_ms'] / 1000:.2f} s, {r['reindex']['per_s']:.0f}/s",
            ">= 1000/s",
            status(r["reindex"]["per_s"], TARGETS["reindex_per_s"], True),
            f"FTS5 build {fb['total_ms'] / 1000:.2f} s (parse {fb['read_parse_ms'] / 1000:.2f} + "
            f"insert {fb['insert_ms'] / 1000:.2f}); {ratio(r['reindex']['median_ms'], fb['total_ms'])}",
        ),
        (
            "catch-up, nothing changed",
            f"p50 {r['catch_up_noop']['p50']:.1f} / p95 {r['catch_up_noop']['p95']:.1f} ms",
            "",
            "",
            f"scan {parts['vault_scan']['p50']:.1f} ms"
            + (
                f" + manifest {parts['manifest_read']['p50']:.1f} ms"
                if "manifest_read" in parts
                else ""
            )
            + f" (p50); is_watched() {r['is_watched_check']['p50']:.3f} ms",
        ),
        add_row("in-process add, plain", "add_inprocess"),
        add_row("in-process add, with watcher", "add_inprocess_watched"),
        cli_add_row("CLI add, plain", "cli_add"),
        cli_add_row("CLI add, with watcher", "cli_add_watched"),
        warm_row("warm search, plain", "search_warm"),
        warm_row("warm search, with watcher", "search_warm_watched"),
        (
            "  search only (catch_up=False)",
            f"p50 {lex['p50']:.2f} / p95 {lex['p95']:.2f} ms" if lex else "n/a",
            "",
            "",
            f"FTS5 AND+OR fallback p50 {fts_fb['p50']:.3f} / p95 {fts_fb['p95']:.3f} ms"
            + (
                f"; {ratio(lex['p50'], fts_fb['p50'])} / {ratio(lex['p95'], fts_fb['p95'])}"
                if lex
                else ""
            ),
        ),
        cli_search_row("cold CLI search, plain", "cli_search"),
        cli_search_row("cold CLI search, with watcher", "cli_search_watched"),
        (
            "cold `memstore hook prompt`, plain",
            f"median {r['cli_hook_prompt']['median']:.0f} / p95 {r['cli_hook_prompt']['p95']:.0f} ms",
            "",
            "",
            "",
        ),
        (
            "cold `memstore hook prompt`, with watcher",
            f"median {r['cli_hook_prompt_watched']['median']:.0f} / "
            f"p95 {r['cli_hook_prompt_watched']['p95']:.0f} ms",
            "",
            "",
            "",
        ),
        ("python -c pass (floor)", f"median {r['python_floor']['median']:.0f} ms", "", "", ""),
    ]
    return rows


def print_report(results: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    print()
    print(
        f"memstore foundation benchmark — {meta['date']} — {meta['python']} — "
        f"{meta['cpus']} CPUs — {meta['platform']} — code {meta['code']['sha256']} "
        f"(sources last changed {meta['code']['newest_source_change']}); other processes "
        f"used {meta['other_processes']['cores']:.2f} cores on average during the run"
    )
    for r in results:
        print()
        print(
            f"N = {r['n']:,} memories   (queries: {r['query_mix']}; "
            f"memstore hits {r['search_outcomes']}; FTS5 AND hits {r['fts5_queries_with_hits']})"
        )
        rows = table_rows(r)
        widths = [
            max(len(row[i]) for row in [*rows, ("figure", "memstore", "target", "verdict", "")])
            for i in range(4)
        ]
        head = ("figure", "memstore", "target", "verdict", "FTS5 reference; memstore/FTS5")
        for row in [head, *rows]:
            print(
                "  "
                + "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True))
                + "  "
                + row[4]
            )
        for label, key in (
            ("plain", "search_warm_by_category"),
            ("with watcher", "search_warm_watched_by_category"),
        ):
            cats = r[key]
            print(
                f"  warm search by query kind, {label} (p50/p95 ms): "
                + ", ".join(f"{c} {v['p50']:.2f}/{v['p95']:.2f}" for c, v in cats.items())
            )
        print(
            f"  watcher ready: in-process {r['watcher_start_ms']:.0f} ms, "
            f"memstore watch {r['watch_ready_s']:.2f} s; memories at the end "
            f"{r['final_memories']:,}, index consistent with the files: {r['final_drift_clean']}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--adds", type=int, default=200)
    parser.add_argument("--cli-adds", type=int, default=20)
    parser.add_argument("--cli-runs", type=int, default=30)
    parser.add_argument("--catchup-runs", type=int, default=50)
    parser.add_argument("--reindex-runs", type=int, default=0, help="0: 3 below 2000 docs, else 1")
    parser.add_argument("--keep", action="store_true", help="keep the temporary vaults")
    parser.add_argument(
        "--no-snapshot",
        action="store_true",
        help="run against the live sources instead of a copy taken at start",
    )
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    if not args.no_snapshot and SNAPSHOT_ENV not in os.environ:
        exec_from_snapshot(raw)  # does not return
    snapshot = os.environ.get(SNAPSHOT_ENV)
    if snapshot and not args.keep:  # also when the run fails
        atexit.register(shutil.rmtree, snapshot, ignore_errors=True)

    meta: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": f"Python {platform.python_version()}",
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "targets": TARGETS,
        "code": code_fingerprint(source_base()),
        "snapshot": bool(snapshot),
    }
    results = []
    started = time.perf_counter()
    mark = cpu_mark()
    for n in args.sizes:
        tmp = Path(tempfile.mkdtemp(prefix=f"memstore-bench-{n}-"))
        try:
            t0 = time.perf_counter()
            results.append(bench_size(n, args, tmp))
            results[-1]["bench_wall_s"] = round(time.perf_counter() - t0, 1)
            log(f"[N={n}] done in {results[-1]['bench_wall_s']} s")
        finally:
            if args.keep:
                log(f"kept {tmp}")
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    meta["total_wall_s"] = round(time.perf_counter() - started, 1)
    meta["other_processes"] = foreign_load(mark)
    live = Path(os.environ.get(LIVE_ENV) or source_base())
    meta["live_code_at_end"] = code_fingerprint(live)
    if meta["live_code_at_end"]["sha256"] != meta["code"]["sha256"]:
        log(
            "note: the project's sources changed during the run; "
            + (
                "the figures are for the snapshot taken at start"
                if snapshot
                else "subprocess figures may mix versions (use the default snapshot mode)"
            )
        )
    if snapshot and not args.keep:
        shutil.rmtree(snapshot, ignore_errors=True)
    print_report(results, meta)
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
