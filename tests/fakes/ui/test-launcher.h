/* test-launcher.h — a scripted CorralLauncher for the UI tests, like libvirt's test driver: a
 * start or resume waits until the test calls test_launcher_finish().
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-launcher.h"

G_BEGIN_DECLS

#define TEST_TYPE_LAUNCHER (test_launcher_get_type ())
G_DECLARE_FINAL_TYPE (TestLauncher, test_launcher, TEST, LAUNCHER, GObject)

struct _TestLauncher {
        GObject parent_instance;
        GTask *task;
        CorralLaunchProgressFunc progress;
        gpointer progress_data;
        char *vm_dir;
        gboolean fail;
        guint suspended;
        guint released; /* release_async calls: the workspace made ready ahead goes */
        char *resumed; /* the VM of the last resume call */
        char *removed; /* the VM of the last remove call */
        gboolean with_client; /* results carry an (unconnected) agent client */
        gboolean resuming; /* the task in progress is a resume */
        gboolean recreated; /* the last resume made a removed workspace again */
        gboolean unconfined_commands; /* of the config the last workspace was made with */
};

/* Shares the folder in vm_dir (offline: shares.json) and finishes the start; a resume finds
 * it there already, like the real launcher: a workspace that is gone (no shares.json) is made
 * again from the task's config, or fails without one. The VM is always "task-test". */
void test_launcher_finish (TestLauncher *self);

G_END_DECLS
