/* egress-private.h — helpers shared by the keychain-bridge sources; not installed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-cjson.h"

#include <glib.h>
