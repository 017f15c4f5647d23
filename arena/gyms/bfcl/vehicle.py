"""BFCL's vehicle control system (``VehicleControlAPI``): engine, doors, fuel, brakes, climate, lights, navigation."""

from __future__ import annotations

import sqlite3
from typing import Any

from arena.core.toolkit import ToolContext, tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.data import long_context_data
from arena.gyms.bfcl.store import Number, PythonError, as_bfcl, draw, dumps, loads, seeded_state

OWNER = "VehicleControlAPI"
DEFAULT_SEED = 141053
MAX_FUEL_LEVEL = 50
MIN_FUEL_LEVEL = 0.0
MILE_PER_GALLON = 20.0

FIELDS: tuple[tuple[str, str, Any], ...] = (
    # (column, key in BFCL's configuration, default)
    ("fuelLevel", "fuelLevel", 0.0), ("batteryVoltage", "batteryVoltage", 12.6),
    ("engine_state", "engineState", "stopped"), ("acTemperature", "acTemperature", 25.0),
    ("fanSpeed", "fanSpeed", 50), ("acMode", "acMode", "auto"), ("humidityLevel", "humidityLevel", 50.0),
    ("headLightStatus", "headLightStatus", "off"), ("parkingBrakeStatus", "parkingBrakeStatus", "released"),
    ("parkingBrakeForce", "parkingBrakeForce", 0.0), ("slopeAngle", "slopeAngle", 0.0),
    ("brakePedalStatus", "brakePedalStatus", "released"), ("brakePedalForce", "brakePedalForce", 0.0),
    ("distanceToNextVehicle", "distanceToNextVehicle", 50.0), ("cruiseStatus", "cruiseStatus", "inactive"),
    ("destination", "destination", "None"), ("frontLeftTirePressure", "frontLeftTirePressure", 32.0),
    ("frontRightTirePressure", "frontRightTirePressure", 32.0),
    ("rearLeftTirePressure", "rearLeftTirePressure", 30.0), ("rearRightTirePressure", "rearRightTirePressure", 30.0),
)
"""The vehicle's scalar attributes; ``parkingBrakeForce``, ``slopeAngle`` and ``brakePedalForce`` are private in BFCL
(read by the tools, never compared)."""

PRIVATE = ("parkingBrakeForce", "slopeAngle", "brakePedalForce")

SCHEMA = f"""
CREATE TABLE vc_vehicles (id TEXT PRIMARY KEY, task TEXT NOT NULL, {", ".join(c for c, _, _ in FIELDS)},
                          remainingUnlockedDoors, doorStatus TEXT NOT NULL, long_context INTEGER NOT NULL);
"""

DEFAULT_DOORS = {"driver": "unlocked", "passenger": "unlocked", "rear_left": "unlocked", "rear_right": "unlocked"}

DISTANCES = {frozenset(("83214", "74532")): 750.0, frozenset(("56108", "62947")): 320.0,
             frozenset(("71354", "83462")): 450.0, frozenset(("47329", "52013")): 290.0,
             frozenset(("69238", "51479")): 630.0, frozenset(("94016", "83214")): 980.0,
             frozenset(("94016", "94704")): 600.0, frozenset(("94704", "08540")): 2550.0,
             frozenset(("94016", "08540")): 1950.0, frozenset(("62947", "47329")): 1053.0,
             frozenset(("94016", "62947")): 780.0, frozenset(("74532", "94016")): 880.0}
"""Driving distances in miles between zip codes (either way)."""

ZIPCODES = {"Rivermist": "83214", "Stonebrook": "74532", "Maplecrest": "56108", "Silverpine": "62947",
            "Shadowridge": "71354", "Sunset Valley": "83462", "Oakendale": "47329", "Willowbend": "52013",
            "Crescent Hollow": "69238", "Autumnville": "51479", "San Francisco": "94016"}


def _vehicle(ctx: ToolContext) -> dict[str, Any]:
    found = ctx.one("SELECT * FROM vc_vehicles WHERE id = ?", (ctx.task_id,))
    if found is None:
        raise PythonError("name 'VehicleControlAPI' is not defined: this task has no vehicle")
    found["doorStatus"] = loads(found["doorStatus"])
    return found


def _set(ctx: ToolContext, **fields: Any) -> None:
    sets = ", ".join(f'"{k}" = ?' for k in fields)
    values = [dumps(v) if k == "doorStatus" else v for k, v in fields.items()]
    ctx.conn.execute(f"UPDATE vc_vehicles SET {sets} WHERE id = ?", (*values, ctx.task_id))


@tool(mode="write", entity="engine", operation="action")
@as_bfcl
def startEngine(ctx: ToolContext, ignitionMode: str) -> dict[str, Any]:
    """Start the engine ("START") or stop it ("STOP"); starting needs every door locked and the brake fully pressed.

    Args:
        ignitionMode: START or STOP.
    """
    car = _vehicle(ctx)
    if ignitionMode == "STOP":
        car["engine_state"] = "stopped"
        _set(ctx, engine_state="stopped")
    if car["remainingUnlockedDoors"] > 0:
        unlocked = ", ".join(door for door, status in car["doorStatus"].items() if status == "unlocked")
        return {"error": "All doors must be locked before starting the engine. Here are the unlocked doors: "
                         + unlocked}
    if car["brakePedalStatus"] != "pressed":
        return {"error": "Brake pedal needs to be pressed when starting the engine."}
    if car["brakePedalForce"] != 1000.0:
        return {"error": "Must press the brake fully before starting the engine."}
    if car["fuelLevel"] < MIN_FUEL_LEVEL:
        return {"error": "Fuel tank is empty."}
    if ignitionMode != "START":
        return {"error": "Invalid ignition mode."}
    _set(ctx, engine_state="running")
    return {"engineState": "running", "fuelLevel": car["fuelLevel"], "batteryVoltage": car["batteryVoltage"]}


@tool(mode="write", entity="fuel", operation="update")
@as_bfcl
def fillFuelTank(ctx: ToolContext, fuelAmount: Number) -> dict[str, Any]:
    """Add fuel to the tank (it holds 50 gallons).

    Args:
        fuelAmount: The gallons to add.
    """
    level = _vehicle(ctx)["fuelLevel"]
    if fuelAmount < 0:
        return {"error": "Fuel amount cannot be negative."}
    if level + fuelAmount > MAX_FUEL_LEVEL:
        return {"error": "Cannot fill gas above the tank capacity."}
    if level + fuelAmount < MIN_FUEL_LEVEL:
        return {"error": "Fuel tank is empty. Min fuel level is 0 gallons."}
    _set(ctx, fuelLevel=level + fuelAmount)
    return {"fuelLevel": level + fuelAmount}


@tool(mode="write", entity="door", operation="update")
@as_bfcl
def lockDoors(ctx: ToolContext, unlock: bool, door: list[str]) -> dict[str, Any]:
    """Lock or unlock doors.

    Args:
        unlock: True to unlock the doors, False to lock them.
        door: The doors: driver, passenger, rear_left, rear_right.
    """
    car = _vehicle(ctx)
    doors, remaining = car["doorStatus"], car["remainingUnlockedDoors"]
    wanted = "unlocked" if unlock else "locked"
    for d in door:
        if d not in doors:
            _set(ctx, doorStatus=doors, remainingUnlockedDoors=remaining)
            return {"error": f"Error during execution: {d!r}"}
        if doors[d] == wanted:
            continue
        doors[d] = wanted
        remaining += 1 if unlock else -1
    _set(ctx, doorStatus=doors, remainingUnlockedDoors=remaining)
    return {"lockStatus": wanted, "remainingUnlockedDoors": remaining}


@tool(mode="write", entity="climate", operation="update")
@as_bfcl
def adjustClimateControl(ctx: ToolContext, temperature: Number, unit: str = "celsius",
                         fanSpeed: int = 50, mode: str = "auto") -> dict[str, Any]:
    """Set the climate control's temperature, fan speed (0-100) and mode.

    Args:
        temperature: The temperature to set.
        unit: celsius or fahrenheit. Defaults to celsius.
        fanSpeed: The fan speed, 0 to 100. Defaults to 50.
        mode: auto, cool, heat or defrost. Defaults to auto.
    """
    car = _vehicle(ctx)
    if not 0 <= fanSpeed <= 100:
        return {"error": "Fan speed must be between 0 and 100."}
    stored = (temperature - 32) * 5 / 9 if unit == "fahrenheit" else temperature
    _set(ctx, acTemperature=stored, fanSpeed=fanSpeed, acMode=mode)
    return {"currentACTemperature": temperature, "climateMode": mode, "humidityLevel": car["humidityLevel"]}


@tool(mode="write", entity="weather", operation="get")
@as_bfcl
def get_outside_temperature_from_google(ctx: ToolContext) -> dict[str, Any]:
    """Read the outside temperature from Google."""
    car = _vehicle(ctx)
    reading = draw(ctx, OWNER, lambda rng: rng.uniform(-10.0, 40.0))
    if car["long_context"]:
        return {**long_context_data()["LONG_WEATHER_EXTENSION"], "outsideTemperature": reading}
    return {"outsideTemperature": reading}


@tool(mode="read", entity="weather", operation="get")
@as_bfcl
def get_outside_temperature_from_weather_com(ctx: ToolContext) -> dict[str, Any]:
    """Read the outside temperature from weather.com."""
    _vehicle(ctx)
    return {"error": 404}


@tool(mode="write", entity="light", operation="update")
@as_bfcl
def setHeadlights(ctx: ToolContext, mode: str) -> dict[str, Any]:
    """Set the headlights: on, off or auto (auto leaves them off).

    Args:
        mode: on, off or auto.
    """
    _vehicle(ctx)
    if mode not in ("on", "off", "auto"):
        return {"error": "Invalid headlight mode."}
    status = "on" if mode == "on" else "off"
    _set(ctx, headLightStatus=status)
    return {"headlightStatus": status}


@tool(mode="read", entity="vehicle", operation="get")
@as_bfcl
def displayCarStatus(ctx: ToolContext, option: str) -> dict[str, Any]:
    """Show one part of the vehicle's status.

    Args:
        option: fuel, battery, doors, climate, headlights, parkingBrake, brakePedal or engine.
    """
    car = _vehicle(ctx)
    status: dict[str, Any] = {}
    if car["long_context"]:
        status["metadata"] = long_context_data()["CAR_STATUS_METADATA_EXTENSION"]
    shown: dict[str, tuple[tuple[str, str], ...]] = {
        "fuel": (("fuelLevel", "fuelLevel"),), "battery": (("batteryVoltage", "batteryVoltage"),),
        "doors": (("doorStatus", "doorStatus"),),
        "climate": (("currentACTemperature", "acTemperature"), ("fanSpeed", "fanSpeed"), ("climateMode", "acMode"),
                    ("humidityLevel", "humidityLevel")),
        "headlights": (("headlightStatus", "headLightStatus"),),
        "parkingBrake": (("parkingBrakeStatus", "parkingBrakeStatus"), ("parkingBrakeForce", "parkingBrakeForce"),
                         ("slopeAngle", "slopeAngle")),
        "brakePedal": (("brakePedalStatus", "brakePedalStatus"), ("brakePedalForce", "brakePedalForce")),
        "engine": (("engineState", "engine_state"),),
    }
    if option not in shown:
        status["error"] = "Invalid option"
        return status
    for key, column in shown[option]:
        status[key] = car[column]
    return status


@tool(mode="write", entity="brake", operation="update")
@as_bfcl
def activateParkingBrake(ctx: ToolContext, mode: str) -> dict[str, Any]:
    """Engage or release the parking brake.

    Args:
        mode: engage or release.
    """
    car = _vehicle(ctx)
    if mode not in ("engage", "release"):
        return {"error": "Invalid mode"}
    status, force = ("engaged", 500.0) if mode == "engage" else ("released", 0.0)
    _set(ctx, parkingBrakeStatus=status, parkingBrakeForce=force, slopeAngle=10.0)
    result = {"parkingBrakeStatus": status, "_parkingBrakeForce": force, "_slopeAngle": 10.0}
    if car["long_context"]:
        return {"parkingBrakeInstruction": long_context_data()["PARKING_BRAKE_INSTRUCTION"], **result}
    return result


@tool(mode="write", entity="brake", operation="update")
@as_bfcl
def pressBrakePedal(ctx: ToolContext, pedalPosition: Number) -> dict[str, Any]:
    """Press the brake pedal to a position from 0 (released) to 1 (fully pressed); it stays pressed until released.

    Args:
        pedalPosition: How far the pedal is pressed, from 0 to 1.
    """
    _vehicle(ctx)
    if not 0 <= pedalPosition <= 1:
        return {"error": "Pedal position must be between 0 and 1."}
    if pedalPosition == 0:
        _set(ctx, brakePedalStatus="released", brakePedalForce=0.0)
        return {"brakePedalStatus": "released", "brakePedalForce": 0.0}
    force = pedalPosition * 1000
    _set(ctx, brakePedalStatus="pressed", brakePedalForce=force)
    return {"brakePedalStatus": "pressed", "brakePedalForce": float(force)}


@tool(mode="write", entity="brake", operation="update")
@as_bfcl
def releaseBrakePedal(ctx: ToolContext) -> dict[str, Any]:
    """Release the brake pedal."""
    _vehicle(ctx)
    _set(ctx, brakePedalStatus="released", brakePedalForce=0.0)
    return {"brakePedalStatus": "released", "brakePedalForce": 0.0}


@tool(mode="write", entity="cruise", operation="update")
@as_bfcl
def setCruiseControl(ctx: ToolContext, speed: Number, activate: bool,
                     distanceToNextVehicle: Number) -> dict[str, Any]:
    """Turn the cruise control on (a speed that is a multiple of 5, up to 120) or off; the engine must be running.

    Args:
        speed: The speed in miles per hour.
        activate: True to turn it on, False to turn it off.
        distanceToNextVehicle: The distance to keep to the next vehicle, in meters.
    """
    car = _vehicle(ctx)
    distance, speed = float(distanceToNextVehicle), float(speed)
    if car["engine_state"] == "stopped":
        return {"error": "Start the engine before activating the cruise control."}
    if activate:
        _set(ctx, distanceToNextVehicle=distance)
        if speed < 0 or speed > 120 or speed % 5 != 0:
            return {"error": "Invalid speed"}
        _set(ctx, cruiseStatus="active")
        return {"cruiseStatus": "active", "currentSpeed": speed, "distanceToNextVehicle": distance}
    _set(ctx, cruiseStatus="inactive", distanceToNextVehicle=distance)
    return {"cruiseStatus": "inactive", "currentSpeed": speed, "distanceToNextVehicle": distance}


@tool(mode="write", entity="vehicle", operation="get")
@as_bfcl
def get_current_speed(ctx: ToolContext) -> dict[str, Any]:
    """Read the vehicle's current speed."""
    _vehicle(ctx)
    return {"currentSpeed": draw(ctx, OWNER, lambda rng: rng.uniform(0.0, 120.0))}


@tool(mode="read", entity="vehicle", operation="action")
@as_bfcl
def display_log(ctx: ToolContext, messages: list[str]) -> dict[str, Any]:
    """Show messages in the vehicle's log.

    Args:
        messages: The messages to show.
    """
    _vehicle(ctx)
    return {"log": messages}


@tool(mode="read", entity="fuel", operation="action")
@as_bfcl
def estimate_drive_feasibility_by_mileage(ctx: ToolContext, distance: Number) -> dict[str, Any]:
    """Say whether the fuel in the tank covers a distance (20 miles per gallon).

    Args:
        distance: The distance in miles.
    """
    return {"canDrive": not _vehicle(ctx)["fuelLevel"] * MILE_PER_GALLON < distance}


@tool(mode="read", entity="fuel", operation="action")
@as_bfcl
def liter_to_gallon(ctx: ToolContext, liter: Number) -> dict[str, Any]:
    """Convert liters to gallons.

    Args:
        liter: The liters.
    """
    _vehicle(ctx)
    return {"gallon": liter * 0.264172}


@tool(mode="read", entity="fuel", operation="action")
@as_bfcl
def gallon_to_liter(ctx: ToolContext, gallon: Number) -> dict[str, Any]:
    """Convert gallons to liters.

    Args:
        gallon: The gallons.
    """
    _vehicle(ctx)
    return {"liter": gallon * 3.78541}


@tool(mode="read", entity="route", operation="action")
@as_bfcl
def estimate_distance(ctx: ToolContext, cityA: str, cityB: str) -> dict[str, Any]:
    """Estimate the driving distance between two places given by zip code.

    Args:
        cityA: The zip code of the first place.
        cityB: The zip code of the second place.
    """
    car = _vehicle(ctx)
    miles = DISTANCES.get(frozenset((cityA, cityB)))
    found: dict[str, Any] = {"distance": miles} if miles is not None else {"error": "distance not found in database."}
    if car["long_context"]:
        found["intermediaryCities"] = long_context_data()["INTERMEDIARY_CITIES"]
    return found


@tool(mode="read", entity="route", operation="search")
@as_bfcl
def get_zipcode_based_on_city(ctx: ToolContext, city: str) -> dict[str, Any]:
    """Get a city's zip code.

    Args:
        city: The city's name.
    """
    _vehicle(ctx)
    return {"zipcode": ZIPCODES.get(city, "00000")}


@tool(mode="write", entity="route", operation="update")
@as_bfcl
def set_navigation(ctx: ToolContext, destination: str) -> dict[str, Any]:
    """Start navigating to a destination.

    Args:
        destination: The destination's address.
    """
    _vehicle(ctx)
    _set(ctx, destination=destination)
    return {"status": "Navigating to " + destination}


@tool(mode="read", entity="tire", operation="get")
@as_bfcl
def check_tire_pressure(ctx: ToolContext) -> dict[str, Any]:
    """Show the four tires' pressures and whether they are healthy (30-35 psi on average)."""
    car = _vehicle(ctx)
    tires = ("frontLeftTirePressure", "frontRightTirePressure", "rearLeftTirePressure", "rearRightTirePressure")
    healthy = 30 <= sum(car[t] for t in tires) / 4 <= 35
    status: dict[str, Any] = {t: car[t] for t in tires}
    status["healthy_tire_pressure"] = healthy
    status["car_info"] = long_context_data()["CAR_STATUS_METADATA_EXTENSION"] if car["long_context"] else {}
    return status


@tool(mode="read", entity="tire", operation="search")
@as_bfcl
def find_nearest_tire_shop(ctx: ToolContext) -> dict[str, Any]:
    """Find the nearest tire shop."""
    _vehicle(ctx)
    return {"shopLocation": "456 Oakwood Avenue, Rivermist, 83214"}


TOOLS = (startEngine, fillFuelTank, lockDoors, adjustClimateControl, get_outside_temperature_from_google,
         get_outside_temperature_from_weather_com, setHeadlights, displayCarStatus, activateParkingBrake,
         pressBrakePedal, releaseBrakePedal, setCruiseControl, get_current_speed, display_log,
         estimate_drive_feasibility_by_mileage, liter_to_gallon, gallon_to_liter, estimate_distance,
         get_zipcode_based_on_city, set_navigation, check_tire_pressure, find_nearest_tire_shop)


def load(conn: sqlite3.Connection, task: str, config: dict[str, Any], long_context: dict[str, Any] | None) -> None:
    """Load a task's vehicle from BFCL's configuration (missing keys take BFCL's defaults)."""
    doors = config.get("doorStatus", DEFAULT_DOORS)
    unlocked = 4 - len([d for d in doors if doors[d] == "locked"])
    values = [config.get(key, default) for _, key, default in FIELDS]
    marks = ", ".join("?" * (len(values) + 5))
    conn.execute(f"INSERT INTO vc_vehicles VALUES ({marks})",
                 (task, task, *values, unlocked, dumps(doors), int(bool(long_context))))
    conn.execute("INSERT INTO rng_states VALUES (?, ?, ?, ?)",
                 (f"{task}/{OWNER}", task, OWNER, seeded_state(int(config.get("random_seed", DEFAULT_SEED)))))


def state(query: Query, task: str) -> dict[str, Any]:
    """The vehicle's public attributes as BFCL's instance holds them."""
    columns = [c for c, _, _ in FIELDS] + ["remainingUnlockedDoors", "doorStatus", "long_context"]
    found = query(f"SELECT {', '.join(columns)} FROM vc_vehicles WHERE id = ?", (task,))[0]
    row = dict(zip(columns, found, strict=True))
    public = {c: row[c] for c, _, _ in FIELDS if c not in PRIVATE}
    return {**public, "remainingUnlockedDoors": row["remainingUnlockedDoors"], "doorStatus": loads(row["doorStatus"]),
            "long_context": bool(row["long_context"])}


VEHICLE = FunctionClass(name="VehicleControlAPI", label="vehicle control", schema=SCHEMA, load=load, state=state,
                        tools={t.name: t for t in TOOLS})
"""The vehicle control class."""
