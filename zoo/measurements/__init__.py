"""The numbers each shipped checkpoint's release measured, as typed rows: one dataclass per release.

``TrainingRecord.measurements`` (:mod:`zoo.records`) is one of :data:`MEASUREMENTS`, told apart by its keys (each
release writes its own set), so reading a ``training.json`` checks every number's name and type, and writing the
record back gives the same JSON. A new release shape is a new row here and a new member of the union.
"""

from zoo.measurements.driving import CarlMeasurements, DrivingLadderMeasurements
from zoo.measurements.gui import GuiAgentMeasurements, GuiGroundingMeasurements
from zoo.measurements.image import FlowGrpoMeasurements
from zoo.measurements.robot import FetchPushBCMeasurements, ResipMeasurements
from zoo.measurements.synthetic import SyntheticColourMeasurements
from zoo.measurements.visual_code import SvgLadderMeasurements

Measurements = (
    GuiGroundingMeasurements
    | GuiAgentMeasurements
    | DrivingLadderMeasurements
    | CarlMeasurements
    | SvgLadderMeasurements
    | SyntheticColourMeasurements
    | FlowGrpoMeasurements
    | FetchPushBCMeasurements
    | ResipMeasurements
)
"""What one release measured: the rows of one of the releases above."""

MEASUREMENTS: tuple[type, ...] = Measurements.__args__

__all__ = [
    "MEASUREMENTS",
    "CarlMeasurements",
    "DrivingLadderMeasurements",
    "FetchPushBCMeasurements",
    "FlowGrpoMeasurements",
    "GuiAgentMeasurements",
    "GuiGroundingMeasurements",
    "Measurements",
    "ResipMeasurements",
    "SvgLadderMeasurements",
    "SyntheticColourMeasurements",
]
