// placeholder, replaced by the engine facade
#pragma once
