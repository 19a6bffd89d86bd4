/* corral-task-start.h — starting a task's workspace, one way for the desktop app (through
 * CorralVmLauncher) and for `corralctl vm create`, so that the two cannot drift apart:
 *
 *   1. corral_task_preflight: the organisation's policy and the folders, checked before
 *      anything is built or booted;
 *   2. corral_task_create_async: the image built or verified, the VM created, its shares,
 *      file server and network proxy started (corral_task_start_services).
 *
 * The caller then connects to the guest agent and waits for the mounts (corral-shares.h).
 * The synchronous functions block (files, child daemons): the app calls them from a worker
 * thread.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

#include <gio/gio.h>

#include "corral-launcher.h"
#include "corral-share-mode.h"
#include "corral-image.h"
#include "corral-vm-manager.h"
#include "corral-vm-pool.h"
#include "egress-policy.h"

G_BEGIN_DECLS

#define CORRAL_TASK_ERROR (corral_task_error_quark ())
GQuark corral_task_error_quark (void);

typedef enum {
        CORRAL_TASK_ERROR_FOLDER, /* a folder cannot be shared as asked; the message says why */
} CorralTaskError;

typedef struct {
        const char *folder; /* a host path */
        FsMode mode;
} CorralTaskShare;

/* The managed policy (corral-policy.h) can be read, is valid and lets this version of Corral
 * run. A damaged one would stop the file server after the boot; the error names the file and
 * who can fix it. */
gboolean corral_task_check_managed_policy (GError **error);

/* Each folder can be shared as asked: it exists, is a folder, and the person (whose rights
 * the file server has) can open it, and write in it for the modes that edit. The error
 * (CORRAL_TASK_ERROR_FOLDER) names the folder and says what to do. */
gboolean corral_task_check_shares (const CorralTaskShare *shares, gsize n_shares, GError **error);

/* Everything that can be known to fail before a build or a boot: the managed policy, then
 * the folders, then whether the policy lets each be shared in its mode (the file server
 * refuses it too; here it is said before anything boots), then the workspace's image, memory
 * and processors (corral_task_check_workspace). */
gboolean corral_task_preflight (const CorralTaskShare *shares,
                                gsize n_shares,
                                const char *image,
                                guint memory_mib,
                                guint vcpus,
                                GError **error);

/* What the organisation's policy says of a workspace's image, memory and processors
 * (images.required, images.allowed, vm.maxMemoryMib, vm.maxVcpus; locked keys), checked before
 * anything is built or booted, a workspace made ready ahead included. The error
 * (CORRAL_POLICY_ERROR) names the limit and what to change. */
gboolean
corral_task_check_workspace (const char *image, guint memory_mib, guint vcpus, GError **error);

/* Whether the assistant may have a screen in the VM (computerUse.allowed; a locked "false"
 * refuses, with CORRAL_POLICY_ERROR_BLOCKED and a sentence saying it is the organisation's). */
gboolean corral_task_check_computer_use (GError **error);

/* The image a new workspace uses when the person chose chosen (NULL: none, "minimal"): the
 * image the organisation requires (images.required, locked), else, for a task with a screen
 * (computer use), "desktop" in place of the built-in images without one (minimal, standard),
 * else chosen. (transfer full) */
char *corral_task_default_image (const char *chosen, gboolean screen);

/* What a new workspace is made from. */
typedef struct {
        const char *name; /* the VM's name */
        const char *image; /* "minimal", "standard" */
        guint memory_mib;
        guint vcpus;
        guint kept_space_mib; /* 0: the default (corral_task_start_services()) */
        const CorralTaskShare *shares;
        gsize n_shares;
        /* A screen for computer use (VNC on the VM folder's vnc.sock), of this size (0: the
         * default, 1280x800); refused when the organisation turned computer use off. */
        gboolean screen;
        guint screen_width, screen_height;
        CorralEgressPolicy *policy; /* (nullable) the network policy; NULL keeps the default */
        /* (nullable) the image, already built and verified in this process for this spec
         * (corral-warm-workspace.h): not checked again */
        const CorralImage *built;
        /* (nullable) a warm pool of VMs booted from built with this spec's memory and vCPUs:
         * its idle VM, when it has one, is taken (named name) instead of a boot */
        CorralVmPool *pool;
} CorralTaskSpec;

/* Builds (or reuses, verified) the image, creates and starts the VM on manager (or takes the
 * pool's) and starts its services with the spec's shares and policy; progress (nullable)
 * hears of the image, boot and share stages on the caller's main context. Does not run
 * corral_task_preflight: callers run it first, before they open libvirt. spec is copied. */
void corral_task_create_async (CorralVmManager *manager,
                               const CorralTaskSpec *spec,
                               CorralLaunchProgressFunc progress,
                               gpointer progress_data,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data);
/* (transfer full) the VM, or NULL with error set. ret_names (nullable): each share's folder
 * name under /workspace. A VM made before a later step failed is left for the caller to
 * show or remove (its name is in the error's message only). */
CorralVmInfo *corral_task_create_finish (GAsyncResult *result, GStrv *ret_names, GError **error);

/* For the running VM in vm_dir: gives its file server kept_space_mib MiB for the originals of
 * changed files (fs_server_set_kept_space(); 0 keeps what the VM has), adds shares (n_shares of
 * them), starts its file server, saves
 * policy as its network policy (NULL: keeps the one it has) and starts its network proxy. A
 * proxy that cannot start is an error, as a file server that cannot is: a task never runs
 * with less than it was given. A VM made without a shares port and given no share has no file
 * server to start. ret_names (nullable): each share's folder name under /workspace. Does not
 * wait for the guest to mount the shares. */
gboolean corral_task_start_services (const char *vm_dir,
                                     guint kept_space_mib,
                                     const CorralTaskShare *shares,
                                     gsize n_shares,
                                     CorralEgressPolicy *policy,
                                     GStrv *ret_names,
                                     GError **error);

G_END_DECLS
