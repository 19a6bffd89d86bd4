/* corral-first-run.h — the steps before a task: welcome, connecting a model provider (the key
 * goes to the keychain and is never shown again), choosing the folder and what the assistant may
 * do with it. Emits ::start when the person presses Start.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-share-mode.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_FIRST_RUN (corral_first_run_get_type ())
G_DECLARE_FINAL_TYPE (CorralFirstRun, corral_first_run, CORRAL, FIRST_RUN, GtkWidget)

GtkWidget *corral_first_run_new (GSettings *settings);
/* Once, before it is shown (a template that holds it made it without): the choices last made,
 * and where the new ones are kept. */
void corral_first_run_set_settings (CorralFirstRun *self, GSettings *settings);

/* "welcome", "provider", "folder"; signal "step-changed" after each */
void corral_first_run_show_step (CorralFirstRun *self, const char *step);
const char *corral_first_run_get_step (CorralFirstRun *self);

void corral_first_run_set_folder (CorralFirstRun *self, const char *path);
/* (nullable) */
const char *corral_first_run_get_folder (CorralFirstRun *self);
void corral_first_run_set_mode (CorralFirstRun *self, FsMode mode);
FsMode corral_first_run_get_mode (CorralFirstRun *self);
/* Computer use for the task about to start (off for each new one, and where the organisation
 * turned it off). */
gboolean corral_first_run_get_computer_use (CorralFirstRun *self);
void corral_first_run_set_computer_use (CorralFirstRun *self, gboolean on);

G_END_DECLS
