/* corral-warm-workspace.h — the next task's workspace, made ready before the person asks.
 *
 * When the person begins a new task (the app shows the folder page), the image is checked (or
 * built) and one VM boots into a warm pool of this object's own (corral-vm-pool.h). Start then
 * takes a VM whose agent already answers and only shares the folder with it: about a second
 * under TCG instead of ten or more. Only VMs this object booted are taken, never another
 * process's idle pool VM (it may run another image or size). A VM not taken is removed by
 * corral_warm_workspace_release_async, which the app calls as it closes: nothing the person
 * did not ask for keeps running after Corral.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

#include "corral-image.h"
#include "corral-launcher.h"
#include "corral-vm-manager.h"
#include "corral-vm-pool.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_WARM_WORKSPACE (corral_warm_workspace_get_type ())
G_DECLARE_FINAL_TYPE (CorralWarmWorkspace, corral_warm_workspace, CORRAL, WARM_WORKSPACE, GObject)

CorralWarmWorkspace *corral_warm_workspace_new (CorralVmManager *manager);

/* Starts making a workspace of this image, memory and vCPUs ready, unless one is (or is being)
 * made ready already; one made for other values is removed. An image with a disk is only
 * checked (the pool boots diskless images). Failures are only logged: the start that follows
 * does the work itself and reports them. */
void corral_warm_workspace_prepare (CorralWarmWorkspace *self,
                                    const char *image,
                                    guint memory_mib,
                                    guint vcpus);

/* Waits for the preparation of these values to end, if one runs (progress, nullable, hears of
 * it: CORRAL_LAUNCH_STAGE_IMAGE with a fraction while the image is being built, then
 * CORRAL_LAUNCH_STAGE_BOOT while the VM boots). */
void corral_warm_workspace_wait_async (CorralWarmWorkspace *self,
                                       const char *image,
                                       guint memory_mib,
                                       guint vcpus,
                                       CorralLaunchProgressFunc progress,
                                       gpointer progress_data,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
/* FALSE only when cancelled. *ret_built: (transfer full) (nullable) the verified image, NULL
 * when none was prepared for these values (or it failed); *ret_pool: (transfer full)
 * (nullable) a pool holding an idle VM booted from it. */
gboolean corral_warm_workspace_wait_finish (CorralWarmWorkspace *self,
                                            GAsyncResult *result,
                                            CorralImage **ret_built,
                                            CorralVmPool **ret_pool,
                                            GError **error);

/* Stops the preparation and removes the VM that was not taken (waiting for a boot in flight
 * to be undone). */
void corral_warm_workspace_release_async (CorralWarmWorkspace *self,
                                          GCancellable *cancellable,
                                          GAsyncReadyCallback callback,
                                          gpointer user_data);
gboolean corral_warm_workspace_release_finish (CorralWarmWorkspace *self,
                                               GAsyncResult *result,
                                               GError **error);

G_END_DECLS
