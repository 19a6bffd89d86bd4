/* egress-private.h — helpers shared by the keychain-bridge sources; not installed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <glib.h>

#ifndef CORRAL_CJSON_AUTOPTR
#define CORRAL_CJSON_AUTOPTR
G_DEFINE_AUTOPTR_CLEANUP_FUNC (cJSON, cJSON_Delete)
#endif
