/* corral-policy-page.h — the organisation's managed policy as the person sees it in
 * Preferences: a page that lists every setting with its value, whether it is locked and the
 * files it came from (what `corralctl policy show` prints), or the problem that stops Corral
 * when the policy is damaged; and the sentence shown under a setting the policy locks.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-policy.h"

G_BEGIN_DECLS

/* An AdwPreferencesPage named "organisation". policy (nullable) is the policy in force;
 * error (nullable) why it could not be loaded (then no task starts, and the page says so). */
GtkWidget *corral_policy_page_new (CorralPolicy *policy, const GError *error);

/* Adds, below row (in an AdwPreferencesGroup), a line with a lock: title, and subtitle
 * (nullable). The row itself is left as it is: the caller decides whether it stays
 * sensitive (a limit) or not (a fixed value). */
void corral_policy_note_below (GtkWidget *row, const char *title, const char *subtitle);

G_END_DECLS
