package zkdcompat;
import java.util.List;
final class FailoverScenarios { static void register(List<Main.Scenario> s) {} }
